// The system's SQLite, for the tests only: the Resilience library never links it.
#include <sqlite3.h>
