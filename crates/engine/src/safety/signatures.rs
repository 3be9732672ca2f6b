//! On-disk signatures a write would destroy, recognised by their magic numbers: the fallback
//! where libblkid (`blkid.rs`, which knows every format `blkid -p` knows) cannot be loaded.
//!
//! A pure function over bytes, so every format is unit-tested on a synthetic image; it knows
//! the formats below and no others (a minix, squashfs or erofs filesystem passes it unseen,
//! which is why libblkid comes first and the run says when this list was used instead). Formats whose magic is only two bytes long (ext, the MBR,
//! FAT) are also sanity-checked, because a device that an earlier benchmark filled with random
//! data must not be refused by chance; everything else is matched on the magic alone.
//!
//! Where each signature lives (offsets in bytes; `size` is the device size):
//!
//! | format                 | offset                                   | magic                        |
//! |------------------------|------------------------------------------|------------------------------|
//! | ext2/3/4               | 1024 + 56                                | `53 EF` (0xEF53 LE)          |
//! | XFS                    | 0                                        | `XFSB`                       |
//! | btrfs                  | 65536 + 64                               | `_BHRfS_M`                   |
//! | f2fs                   | 1024                                     | 0xF2F52010 LE                |
//! | FAT12/16/32            | 0 (boot sector BPB), 54 / 82 type string | jump, sane BPB               |
//! | NTFS / exFAT           | 3                                        | `NTFS    ` / `EXFAT   `      |
//! | BitLocker              | 3                                        | `-FVE-FS-`                   |
//! | MBR partition table    | 510, entries at 446                      | `55 AA` + a plausible entry  |
//! | GPT                    | 512 or 4096; backup at size-512/-4096    | `EFI PART`                   |
//! | LVM2 PV label          | start of sector 0..=3 (512 B), +24       | `LABELONE`, `LVM2 001`       |
//! | md RAID v1.1 / v1.2    | 0 / 4096                                 | 0xA92B4EFC LE, major 1       |
//! | md RAID v1.0           | (size - 8192) & !4095                    | 0xA92B4EFC LE, major 1       |
//! | md RAID v0.90          | (size & !65535) - 65536                  | 0xA92B4EFC LE or BE, major 0 |
//! | swap                   | pagesize - 10 (4K, 8K, 16K, 64K pages)   | `SWAPSPACE2` / `SWAP-SPACE`  |
//! | LUKS                   | 0; LUKS2 backup at 16K..512K             | `LUKS BA BE` / `SKUL BA BE`  |
//! | ISO 9660               | 32769                                    | `CD001`                      |
//! | bcache                 | 4096 + 24                                | 16-byte bcache UUID magic    |
//! | ZFS                    | uberblock rings of the four labels       | 0x00BAB10C (u64, LE or BE)   |

use super::Finding;

/// A signature found, and whether it is a partition table (the caller uses that to decide
/// whether the kernel's list of partitions still needs saying).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    pub(crate) what: String,
    pub(crate) partition_table: bool,
}

/// Signatures found in the first bytes of a device (pure function, unit-testable).
///
/// `head` is the first 1 MiB (or less if the device is smaller); `tail` is the last bytes of the
/// device (1 MiB or so), with `device_size` the full size, so end-of-device signatures (md
/// v0.90/v1.0 superblocks, the GPT backup header, the last ZFS labels) are checked too.
/// Returns human names like "an ext4 filesystem signature".
pub fn detect_signatures(head: &[u8], tail: &[u8], device_size: u64) -> Vec<Finding> {
    detect(head, tail, device_size).into_iter().map(|s| Finding { what: s.what }).collect()
}

pub(crate) fn detect(head: &[u8], tail: &[u8], device_size: u64) -> Vec<Signature> {
    let img = Image::new(head, tail, device_size);
    let mut found = Vec::new();
    let mut fs = |what: &str| found.push(Signature { what: what.to_string(), partition_table: false });

    if let Some(ext) = ext(&img) {
        fs(ext);
    }
    for (offset, magic, what) in SIMPLE {
        if img.has(*offset, magic) {
            fs(what);
        }
    }
    let boot_sector = boot_sector(&img);
    if let Some(what) = boot_sector {
        fs(what);
    }
    if let Some(what) = swap(&img) {
        fs(what);
    }
    if luks2_backup(&img) && !img.has(0, LUKS) {
        fs("a LUKS2 encrypted volume header (backup copy)");
    }
    if lvm2(&img) {
        fs("an LVM2 physical volume label");
    }
    for version in md_versions(&img) {
        fs(&format!("a Linux RAID (md) superblock (metadata {version})"));
    }
    if zfs(&img) {
        fs("a ZFS pool label");
    }

    let gpt = gpt(&img);
    if let Some(what) = gpt {
        found.push(Signature { what: what.to_string(), partition_table: true });
    }
    if boot_sector.is_none() {
        match mbr(&img) {
            Some(Mbr::Protective) if gpt.is_some() => {}
            Some(Mbr::Protective) => found.push(Signature {
                what: "a protective MBR of a GPT partition table".to_string(),
                partition_table: true,
            }),
            Some(Mbr::Dos) => found
                .push(Signature { what: "an MBR (DOS) partition table".to_string(), partition_table: true }),
            None => {}
        }
    }
    found
}

const LUKS: &[u8] = b"LUKS\xba\xbe";

/// Signatures that are a long-enough magic at one fixed offset.
const SIMPLE: &[(u64, &[u8], &str)] = &[
    (0, b"XFSB", "an XFS filesystem signature"),
    (65536 + 64, b"_BHRfS_M", "a btrfs filesystem signature"),
    (1024, &[0x10, 0x20, 0xF5, 0xF2], "an F2FS filesystem signature"),
    (0, LUKS, "a LUKS encrypted volume header"),
    (32769, b"CD001", "an ISO 9660 filesystem signature"),
    (
        4096 + 24,
        &[0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81],
        "a bcache superblock",
    ),
];

/// The device as the checks see it: a head and a tail, addressed by absolute offset.
struct Image<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    tail_start: u64,
    size: u64,
}

impl<'a> Image<'a> {
    fn new(head: &'a [u8], tail: &'a [u8], device_size: u64) -> Self {
        // A caller's size smaller than what it read cannot be right; trust the bytes.
        let size = device_size.max(len64(head));
        // A tail longer than the device: only its last `size` bytes can be the device's.
        let tail = match usize::try_from(size) {
            Ok(size) if size < tail.len() => &tail[tail.len() - size..],
            _ => tail,
        };
        Image { head, tail, tail_start: size - len64(tail), size }
    }

    /// `len` bytes at absolute `offset`, if the head or the tail holds all of them.
    fn bytes(&self, offset: u64, len: usize) -> Option<&'a [u8]> {
        let end = offset.checked_add(len64_usize(len))?;
        if end <= len64(self.head) {
            let start = usize::try_from(offset).ok()?;
            return self.head.get(start..start + len);
        }
        if offset >= self.tail_start && end <= self.size {
            let start = usize::try_from(offset - self.tail_start).ok()?;
            return self.tail.get(start..start + len);
        }
        None
    }

    fn has(&self, offset: u64, magic: &[u8]) -> bool {
        self.bytes(offset, magic.len()) == Some(magic)
    }

    fn u16le(&self, offset: u64) -> Option<u16> {
        let b = self.bytes(offset, 2)?;
        Some(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32le(&self, offset: u64) -> Option<u32> {
        let b = self.bytes(offset, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

fn len64(bytes: &[u8]) -> u64 {
    len64_usize(bytes.len())
}

fn len64_usize(len: usize) -> u64 {
    // usize is at most 64 bits on every target Rust supports.
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// ext2/3/4: which one, by the feature flags e2fsprogs and blkid use to tell them apart.
fn ext(img: &Image) -> Option<&'static str> {
    const SB: u64 = 1024;
    const HAS_JOURNAL: u32 = 0x4;
    const INCOMPAT_JOURNAL_DEV: u32 = 0x8;
    // What ext3 understands; any other flag means ext4 (as blkid decides).
    const EXT3_INCOMPAT: u32 = 0x2 | 0x4 | 0x10;
    const EXT3_RO_COMPAT: u32 = 0x1 | 0x2 | 0x4;

    if img.u16le(SB + 56)? != 0xEF53 || img.u32le(SB + 24)? > 6 {
        return None;
    }
    let compat = img.u32le(SB + 92)?;
    let incompat = img.u32le(SB + 96)?;
    let ro_compat = img.u32le(SB + 100)?;
    if incompat & INCOMPAT_JOURNAL_DEV != 0 {
        return Some("an ext3/ext4 external journal signature");
    }
    // Inode count and blocks per group are never zero in a real superblock.
    if img.u32le(SB)? == 0 || img.u32le(SB + 32)? == 0 {
        return None;
    }
    Some(if incompat & !EXT3_INCOMPAT != 0 || ro_compat & !EXT3_RO_COMPAT != 0 {
        "an ext4 filesystem signature"
    } else if compat & HAS_JOURNAL != 0 {
        "an ext3 filesystem signature"
    } else {
        "an ext2 filesystem signature"
    })
}

/// A filesystem boot sector at byte 0 (FAT, NTFS, exFAT, BitLocker). Its last two bytes are
/// `55 AA` like an MBR's, so the MBR check defers to this one.
fn boot_sector(img: &Image) -> Option<&'static str> {
    let s = img.bytes(0, 512)?;
    match &s[3..11] {
        b"NTFS    " => return Some("an NTFS filesystem signature"),
        b"EXFAT   " => return Some("an exFAT filesystem signature"),
        b"-FVE-FS-" => return Some("a BitLocker encrypted volume signature"),
        _ => {}
    }
    let bytes_per_sector = u16::from_le_bytes([s[11], s[12]]);
    let sectors_per_cluster = s[13];
    let reserved = u16::from_le_bytes([s[14], s[15]]);
    let fats = s[16];
    let media = s[21];
    let bpb_ok = matches!(bytes_per_sector, 512 | 1024 | 2048 | 4096)
        && sectors_per_cluster.is_power_of_two()
        && reserved != 0
        && matches!(fats, 1 | 2)
        && (media == 0xF0 || media >= 0xF8);
    let jump_ok = (s[0] == 0xEB && s[2] == 0x90) || s[0] == 0xE9;
    let fat32_label = &s[82..90] == b"FAT32   ";
    let fat16_label = matches!(&s[54..62], b"FAT12   " | b"FAT16   " | b"FAT     ");
    if !bpb_ok || !(jump_ok || fat32_label || fat16_label) {
        return None;
    }
    let sectors_per_fat16 = u16::from_le_bytes([s[22], s[23]]);
    Some(if fat32_label || sectors_per_fat16 == 0 {
        "a FAT32 (vfat) filesystem signature"
    } else {
        "a FAT12/16 (vfat) filesystem signature"
    })
}

/// Swap, or a hibernation image written into swap, at the end of the first page.
fn swap(img: &Image) -> Option<&'static str> {
    const KINDS: &[(&[u8], &str)] = &[
        (b"SWAPSPACE2", "a swap space signature"),
        (b"SWAP-SPACE", "a swap space signature"),
        (b"S1SUSPEND", "a swap space signature (holding a hibernation image)"),
        (b"S2SUSPEND", "a swap space signature (holding a hibernation image)"),
        (b"ULSUSPEND", "a swap space signature (holding a hibernation image)"),
        (b"LINHIB0001", "a swap space signature (holding a hibernation image)"),
    ];
    for page in [4096u64, 8192, 16384, 65536] {
        for (magic, what) in KINDS {
            if img.has(page - 10, magic) {
                return Some(what);
            }
        }
    }
    None
}

/// LUKS2 keeps a second header copy at one of these offsets; the primary may be gone.
fn luks2_backup(img: &Image) -> bool {
    (0..6).any(|shift| img.has(0x4000 << shift, b"SKUL\xba\xbe"))
}

fn lvm2(img: &Image) -> bool {
    (0..4u64).any(|sector| img.has(sector * 512, b"LABELONE") && img.has(sector * 512 + 24, b"LVM2 001"))
}

/// md superblock versions found; each version lives at its own offset.
fn md_versions(img: &Image) -> Vec<&'static str> {
    const MAGIC_LE: [u8; 4] = 0xa92b_4efc_u32.to_le_bytes();
    const MAGIC_BE: [u8; 4] = 0xa92b_4efc_u32.to_be_bytes();
    let v1_0 = img.size.checked_sub(8192).map(|o| o & !4095);
    let v0_90 = (img.size & !65535).checked_sub(65536);
    let places = [(Some(0), "1.1"), (Some(4096), "1.2"), (v1_0, "1.0"), (v0_90, "0.90")];
    let mut seen = Vec::new();
    let mut found = Vec::new();
    for (offset, version) in places {
        let Some(offset) = offset else { continue };
        if seen.contains(&offset) {
            continue;
        }
        seen.push(offset);
        let major = if version == "0.90" { 0 } else { 1 };
        let le = img.has(offset, &MAGIC_LE) && img.u32le(offset + 4) == Some(major);
        // Only 0.90 is written in the host's byte order, so only it may be big-endian.
        let be = version == "0.90"
            && img.has(offset, &MAGIC_BE)
            && img.bytes(offset + 4, 4) == Some(&major.to_be_bytes()[..]);
        if le || be {
            found.push(version);
        }
    }
    found
}

fn gpt(img: &Image) -> Option<&'static str> {
    const MAGIC: &[u8] = b"EFI PART";
    if img.has(512, MAGIC) || img.has(4096, MAGIC) {
        return Some("a GPT partition table");
    }
    let backup = [512, 4096]
        .iter()
        .filter_map(|lba| img.size.checked_sub(*lba))
        .any(|offset| offset >= 4096 && img.has(offset, MAGIC));
    backup.then_some("a GPT partition table (backup header at the end of the device)")
}

enum Mbr {
    Dos,
    Protective,
}

/// An MBR: `55 AA` at 510 and a partition table whose entries look like partitions.
fn mbr(img: &Image) -> Option<Mbr> {
    let s = img.bytes(0, 512)?;
    if s[510..512] != [0x55, 0xAA] {
        return None;
    }
    let mut used = 0;
    let mut protective = false;
    for entry in s[446..510].chunks_exact(16) {
        if entry[0] != 0 && entry[0] != 0x80 {
            return None;
        }
        let kind = entry[4];
        let start = u32::from_le_bytes([entry[8], entry[9], entry[10], entry[11]]);
        let sectors = u32::from_le_bytes([entry[12], entry[13], entry[14], entry[15]]);
        if kind == 0 || sectors == 0 {
            continue;
        }
        if start == 0 || u64::from(start) * 512 >= img.size {
            return None;
        }
        used += 1;
        protective |= kind == 0xEE;
    }
    match (used, protective) {
        (0, _) => None,
        (_, true) => Some(Mbr::Protective),
        (_, false) => Some(Mbr::Dos),
    }
}

/// ZFS writes four 256 KiB labels, two at each end; each holds a ring of uberblocks from 128 KiB
/// on, every slot a multiple of 1 KiB, each starting with the uberblock magic.
fn zfs(img: &Image) -> bool {
    const LABEL: u64 = 256 * 1024;
    const MAGIC: u64 = 0x00ba_b10c;
    let aligned = img.size & !(LABEL - 1);
    let labels = [Some(0), Some(LABEL), aligned.checked_sub(2 * LABEL), aligned.checked_sub(LABEL)];
    labels.into_iter().flatten().any(|label| {
        (0..128).any(|slot| {
            let offset = label + LABEL / 2 + slot * 1024;
            img.has(offset, &MAGIC.to_le_bytes()) || img.has(offset, &MAGIC.to_be_bytes())
        })
    })
}

#[cfg(test)]
mod tests;
