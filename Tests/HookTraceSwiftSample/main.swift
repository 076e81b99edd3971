// hook-trace-swift-sample: a Swift program whose calls of the standard
// library (Swift.print) hook-trace's tests trace, to check that Swift names
// are printed demangled.
print(CommandLine.arguments.dropFirst().joined(separator: " "))
