
import Glibc




/// Writes diagnostics to file descriptor 2 without touching C's mutable `stderr` global.
enum FileHandleStandardError {
    static func write(_ message: String) {
        var message = message
        message.withUTF8 { bytes in
            var rest = UnsafeRawBufferPointer(bytes)
            while !rest.isEmpty {
                let n = Glibc.write(2, rest.baseAddress, rest.count)
                if n <= 0 { return }
                rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            }
        }
    }
}
