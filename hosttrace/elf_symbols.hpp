// Function symbols of an ELF shared object as uprobe offsets (file offsets, which is what
// the kernel's uprobe interface takes), honouring symbol versions: libibverbs exports
// ibv_create_qp twice (IBVERBS_1.0 compat and IBVERBS_1.1 default), and applications
// link the default one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace insert::hosttrace {

class ElfSymbols {
  public:
    // Reads .dynsym and, where present, .symtab. nullopt with `error` set when the file
    // is missing or not an ELF object.
    static std::optional<ElfSymbols> load(const std::string& path, std::string& error);

    // File offset of the default-version definition of `name`, if the object defines it.
    std::optional<uint64_t> function_offset(std::string_view name) const;

    // Converts a virtual address of this object (as in its symbol table) to a file offset.
    std::optional<uint64_t> vaddr_to_offset(uint64_t vaddr) const;

  private:
    struct Segment {
        uint64_t vaddr;
        uint64_t memsz;
        uint64_t offset;
    };
    struct Symbol {
        uint64_t vaddr;
        bool default_version;
    };
    std::unordered_map<std::string, Symbol> functions_;
    std::vector<Segment> segments_;
};

}  // namespace insert::hosttrace
