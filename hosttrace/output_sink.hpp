// Where JSON Lines go: stdout, a file, or a Unix stream socket the correlator listens on.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace insert::hosttrace {

class OutputSink {
  public:
    // `path` "-" is stdout; `unix_socket` non-empty connects there instead.
    static std::unique_ptr<OutputSink> open(const std::string& path, const std::string& unix_socket,
                                            std::string& error);
    ~OutputSink();
    OutputSink(const OutputSink&) = delete;
    OutputSink& operator=(const OutputSink&) = delete;

    // Whole lines, each ending in a newline. False once the destination failed (disk full,
    // reader gone).
    bool write(std::string_view lines);
    bool flush();

  private:
    OutputSink() = default;
    FILE* file_ = nullptr;
    bool owns_file_ = false;
    int socket_fd_ = -1;
    std::string pending_;  // socket output, sent on flush
    bool failed_ = false;
};

}  // namespace insert::hosttrace
