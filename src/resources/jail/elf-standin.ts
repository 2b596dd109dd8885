/**
 * A harmless stand-in shared library, as bytes: what CPU and login nodes bind over the jail's GPU
 * placeholders so that every path the shared ld.so.cache lists is a loadable ELF object there
 * (Soperator builds one with gcc in its slurmd and login images, `int main() { return 0; }` into
 * /lib/<arch>-linux-gnu/libdummy.so: images/worker/slurmd.dockerfile). Hosts have no compiler,
 * so racksmith writes the object itself: an ELF64 little-endian ET_DYN with no code and no
 * symbols, one read-write PT_LOAD over the whole file, PT_DYNAMIC (empty symbol table, string
 * table and SysV hash table, as ld.so and ldconfig read them; no SONAME, like libdummy) and
 * PT_GNU_STACK (a non-executable stack: glibc refuses to dlopen objects that ask for one).
 */

/** ELF machine numbers of the architectures a jail node may have (uname -m -> e_machine). */
const MACHINES: Record<string, number> = { x86_64: 62, aarch64: 183 };

export const STANDIN_ARCHES = Object.keys(MACHINES);

const EHDR = 64;
const PHDR = 56;
const PHNUM = 3;
const SYMTAB = EHDR + PHNUM * PHDR; // one null symbol (24 bytes)
const HASH = SYMTAB + 24; // nbucket = nchain = 1, both 0 (16 bytes)
const STRTAB = HASH + 16; // "\0", padded to 8
const DYNAMIC = STRTAB + 8;
const DYN_ENTRIES: Array<[number, number]> = [
  [4, HASH], // DT_HASH
  [5, STRTAB], // DT_STRTAB
  [6, SYMTAB], // DT_SYMTAB
  [10, 1], // DT_STRSZ
  [11, 24], // DT_SYMENT
  [0, 0], // DT_NULL
];
const SIZE = DYNAMIC + DYN_ENTRIES.length * 16;

const cache = new Map<string, Buffer>();

/** The stand-in for `arch` (`uname -m`), or undefined for an architecture it is not made for. */
export function standinLibrary(arch: string): Buffer | undefined {
  const machine = MACHINES[arch];
  if (machine === undefined) return undefined;
  const known = cache.get(arch);
  if (known) return known;
  const b = Buffer.alloc(SIZE);
  b.write('\x7fELF', 0, 'latin1');
  b[4] = 2; // ELFCLASS64
  b[5] = 1; // little-endian
  b[6] = 1; // EV_CURRENT
  b.writeUInt16LE(3, 16); // ET_DYN
  b.writeUInt16LE(machine, 18);
  b.writeUInt32LE(1, 20); // e_version
  b.writeBigUInt64LE(0n, 24); // e_entry
  b.writeBigUInt64LE(BigInt(EHDR), 32); // e_phoff
  b.writeBigUInt64LE(0n, 40); // e_shoff: no section headers
  b.writeUInt16LE(EHDR, 52);
  b.writeUInt16LE(PHDR, 54);
  b.writeUInt16LE(PHNUM, 56);
  b.writeUInt16LE(64, 58); // e_shentsize
  const phdr = (i: number, type: number, flags: number, offset: number, size: number, align: number) => {
    const at = EHDR + i * PHDR;
    b.writeUInt32LE(type, at);
    b.writeUInt32LE(flags, at + 4);
    b.writeBigUInt64LE(BigInt(offset), at + 8); // p_offset
    b.writeBigUInt64LE(BigInt(offset), at + 16); // p_vaddr
    b.writeBigUInt64LE(BigInt(offset), at + 24); // p_paddr
    b.writeBigUInt64LE(BigInt(size), at + 32); // p_filesz
    b.writeBigUInt64LE(BigInt(size), at + 40); // p_memsz
    b.writeBigUInt64LE(BigInt(align), at + 48);
  };
  const RW = 4 | 2;
  phdr(0, 1, RW, 0, SIZE, 0x1000); // PT_LOAD
  phdr(1, 2, RW, DYNAMIC, DYN_ENTRIES.length * 16, 8); // PT_DYNAMIC
  phdr(2, 0x6474e551, RW, 0, 0, 16); // PT_GNU_STACK
  b.writeUInt32LE(1, HASH); // nbucket
  b.writeUInt32LE(1, HASH + 4); // nchain
  DYN_ENTRIES.forEach(([tag, value], i) => {
    b.writeBigInt64LE(BigInt(tag), DYNAMIC + i * 16);
    b.writeBigUInt64LE(BigInt(value), DYNAMIC + i * 16 + 8);
  });
  cache.set(arch, b);
  return b;
}
