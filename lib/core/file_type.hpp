#pragma once
// What kind of file a path names, and opening input files without ever blocking: open() of a FIFO
// waits for a writer forever, so inputs are checked with stat() first and opened non-blocking.
#include <sys/types.h>

#include <string>

namespace zt {

// "a regular file", "a directory", "a FIFO", "a socket", "a character device", "a block device", ...
const char* file_type_name(mode_t mode);

// Opens a regular file read-only and returns its descriptor, or -1 with `why` set to the reason:
// errno's text ("No such file or directory", "Permission denied", ...) or, for anything that is not a
// regular file, "is a FIFO, not a regular file" (nothing else is opened). `error` gets errno, or 0
// when the file exists but is of the wrong type.
int open_regular_file(const std::string& path, std::string& why, int& error);

}  // namespace zt
