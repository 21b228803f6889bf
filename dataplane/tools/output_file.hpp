// Output files of the tools (`--records`): checked before anything starts, opened only
// after start-up succeeded, never the input. A bad EAL option or a failed start must not
// truncate an existing file, and `insert-dp replay X.pcap --records X.pcap` (or through a
// symlink or a hard link) must not destroy the capture it is about to read.
#pragma once

#include <cstdio>
#include <string>

namespace insert::tools {

// Whether `path` (given for `option`) could be written without opening it: not empty, not
// a directory, writable (or creatable in its directory), and not the same file as `input`
// (may be empty). False and `error` (one line naming the option and the file) otherwise.
bool check_output(const std::string& option, const std::string& path, const std::string& input,
                  std::string& error);

// Opens `path` for writing, truncating a regular file only once it is known not to be
// `input`. nullptr and `error` on failure.
std::FILE* open_output(const std::string& option, const std::string& path, const std::string& input,
                       std::string& error);

}  // namespace insert::tools
