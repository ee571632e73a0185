/// The version of the compiler that built this executable, from `#if compiler(...)`.
///
/// Conditional compilation is the only way to read it without running a tool;
/// the ladder covers 6.0.0 through 6.5.4 and says so outside that range.
enum SwiftVersion {
    /// For example `6.3.1`.
    #if compiler(>=6.5.4)
        static let compiler = "6.5.4 or later"
    #elseif compiler(>=6.5.3)
        static let compiler = "6.5.3"
    #elseif compiler(>=6.5.2)
        static let compiler = "6.5.2"
    #elseif compiler(>=6.5.1)
        static let compiler = "6.5.1"
    #elseif compiler(>=6.5.0)
        static let compiler = "6.5.0"
    #elseif compiler(>=6.4.4)
        static let compiler = "6.4.4"
    #elseif compiler(>=6.4.3)
        static let compiler = "6.4.3"
    #elseif compiler(>=6.4.2)
        static let compiler = "6.4.2"
    #elseif compiler(>=6.4.1)
        static let compiler = "6.4.1"
    #elseif compiler(>=6.4.0)
        static let compiler = "6.4.0"
    #elseif compiler(>=6.3.4)
        static let compiler = "6.3.4"
    #elseif compiler(>=6.3.3)
        static let compiler = "6.3.3"
    #elseif compiler(>=6.3.2)
        static let compiler = "6.3.2"
    #elseif compiler(>=6.3.1)
        static let compiler = "6.3.1"
    #elseif compiler(>=6.3.0)
        static let compiler = "6.3.0"
    #elseif compiler(>=6.2.4)
        static let compiler = "6.2.4"
    #elseif compiler(>=6.2.3)
        static let compiler = "6.2.3"
    #elseif compiler(>=6.2.2)
        static let compiler = "6.2.2"
    #elseif compiler(>=6.2.1)
        static let compiler = "6.2.1"
    #elseif compiler(>=6.2.0)
        static let compiler = "6.2.0"
    #elseif compiler(>=6.1.4)
        static let compiler = "6.1.4"
    #elseif compiler(>=6.1.3)
        static let compiler = "6.1.3"
    #elseif compiler(>=6.1.2)
        static let compiler = "6.1.2"
    #elseif compiler(>=6.1.1)
        static let compiler = "6.1.1"
    #elseif compiler(>=6.1.0)
        static let compiler = "6.1.0"
    #elseif compiler(>=6.0.4)
        static let compiler = "6.0.4"
    #elseif compiler(>=6.0.3)
        static let compiler = "6.0.3"
    #elseif compiler(>=6.0.2)
        static let compiler = "6.0.2"
    #elseif compiler(>=6.0.1)
        static let compiler = "6.0.1"
    #elseif compiler(>=6.0.0)
        static let compiler = "6.0.0"
    #else
        static let compiler = "before 6.0"
    #endif
}
