#include "hosttrace/elf_symbols.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace insert::hosttrace {

namespace {

// Bit 15 of a .gnu.version entry marks a hidden (non-default, `name@VER`) definition.
constexpr uint16_t kVersymHidden = 0x8000;

struct FdGuard {
    int fd;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};

struct ElfGuard {
    Elf* elf;
    ~ElfGuard() {
        if (elf) elf_end(elf);
    }
};

}  // namespace

std::optional<ElfSymbols> ElfSymbols::load(const std::string& path, std::string& error) {
    if (elf_version(EV_CURRENT) == EV_NONE) {
        error = "libelf initialisation failed";
        return std::nullopt;
    }
    FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd.fd < 0) {
        error = path + ": " + std::strerror(errno);
        return std::nullopt;
    }
    ElfGuard elf{elf_begin(fd.fd, ELF_C_READ, nullptr)};
    if (!elf.elf || elf_kind(elf.elf) != ELF_K_ELF) {
        error = path + ": not an ELF file";
        return std::nullopt;
    }

    ElfSymbols out;
    size_t phnum = 0;
    elf_getphdrnum(elf.elf, &phnum);
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf.elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
            out.segments_.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset});
    }
    if (out.segments_.empty()) {
        error = path + ": ELF file without loadable segments";
        return std::nullopt;
    }

    // .gnu.version is parallel to .dynsym; find it first.
    Elf_Data* versym = nullptr;
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf.elf, scn));) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym)
            versym = elf_getdata(scn, nullptr);
    }

    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf.elf, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
            continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (!data || sh.sh_entsize == 0) continue;
        const size_t count = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < count; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
            if (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)
                continue;
            if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
            const char* name = elf_strptr(elf.elf, sh.sh_link, sym.st_name);
            if (!name || !*name) continue;
            bool is_default = true;
            if (sh.sh_type == SHT_DYNSYM && versym) {
                GElf_Versym v;
                if (gelf_getversym(versym, static_cast<int>(i), &v))
                    is_default = (v & kVersymHidden) == 0;
            }
            // .symtab names carry no version; .dynsym's verdict wins when both exist.
            auto [it, inserted] =
                out.functions_.try_emplace(name, Symbol{sym.st_value, is_default});
            if (!inserted && sh.sh_type == SHT_DYNSYM && !it->second.default_version && is_default)
                it->second = Symbol{sym.st_value, true};
        }
    }
    return out;
}

std::optional<uint64_t> ElfSymbols::function_offset(std::string_view name) const {
    auto it = functions_.find(std::string(name));
    if (it == functions_.end()) return std::nullopt;
    return vaddr_to_offset(it->second.vaddr);
}

std::optional<uint64_t> ElfSymbols::vaddr_to_offset(uint64_t vaddr) const {
    for (const Segment& s : segments_)
        if (vaddr >= s.vaddr && vaddr < s.vaddr + s.memsz) return vaddr - s.vaddr + s.offset;
    return std::nullopt;
}

}  // namespace insert::hosttrace
