import Resilience

print("benchmarks: see issue 5")
