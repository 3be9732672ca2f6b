//! Every signature on a synthetic image: zeroes with only the magic (and, for the two-byte
//! magics, the few fields the sanity checks read) written at the documented offset.

use super::detect_signatures;

const MIB: u64 = 1 << 20;

/// A device of `size` bytes as `inspect_block_device` reads it: the first and last MiB.
struct Synth {
    head: Vec<u8>,
    tail: Vec<u8>,
    size: u64,
}

impl Synth {
    fn new(size: u64) -> Self {
        let ends = usize::try_from(size.min(MIB)).expect("a MiB fits in usize");
        Synth { head: vec![0; ends], tail: vec![0; ends], size }
    }

    /// Writes `bytes` at absolute `offset`, into the head, the tail, or both where they overlap.
    fn put(&mut self, offset: u64, bytes: &[u8]) -> &mut Self {
        let tail_start = self.size - self.tail.len() as u64;
        for (i, b) in bytes.iter().enumerate() {
            let at = offset + i as u64;
            if at < self.head.len() as u64 {
                self.head[at as usize] = *b;
            }
            if at >= tail_start && at < self.size {
                self.tail[(at - tail_start) as usize] = *b;
            }
        }
        self
    }

    fn put_u16(&mut self, offset: u64, v: u16) -> &mut Self {
        self.put(offset, &v.to_le_bytes())
    }

    fn put_u32(&mut self, offset: u64, v: u32) -> &mut Self {
        self.put(offset, &v.to_le_bytes())
    }

    fn found(&self) -> Vec<String> {
        detect_signatures(&self.head, &self.tail, self.size).into_iter().map(|f| f.to_string()).collect()
    }
}

fn device() -> Synth {
    Synth::new(64 * MIB)
}

fn ext_superblock(compat: u32, incompat: u32, ro_compat: u32) -> Synth {
    let mut s = device();
    s.put_u32(1024, 16384) // inode count
        .put_u32(1024 + 24, 2) // log2(block size) - 10
        .put_u32(1024 + 32, 32768) // blocks per group
        .put_u16(1024 + 56, 0xEF53)
        .put_u32(1024 + 92, compat)
        .put_u32(1024 + 96, incompat)
        .put_u32(1024 + 100, ro_compat);
    s
}

fn fat_boot_sector(fat32: bool) -> Synth {
    let mut s = device();
    s.put(0, &[0xEB, 0x3C, 0x90])
        .put(3, b"mkfs.fat")
        .put_u16(11, 512)
        .put(13, &[4])
        .put_u16(14, if fat32 { 32 } else { 4 })
        .put(16, &[2])
        .put(21, &[0xF8])
        .put(510, &[0x55, 0xAA]);
    if fat32 {
        s.put(82, b"FAT32   ");
    } else {
        s.put_u16(22, 64).put(54, b"FAT16   ");
    }
    s
}

fn mbr_entry(s: &mut Synth, index: u64, kind: u8, start: u32, sectors: u32) {
    let at = 446 + 16 * index;
    s.put(at + 4, &[kind]).put_u32(at + 8, start).put_u32(at + 12, sectors).put(510, &[0x55, 0xAA]);
}

fn one(s: &Synth) -> String {
    let found = s.found();
    assert_eq!(found.len(), 1, "expected exactly one finding, got {found:?}");
    found[0].clone()
}

#[test]
fn ext2_ext3_ext4_are_told_apart_by_feature_flags() {
    assert_eq!(one(&ext_superblock(0, 0x2, 0x1)), "an ext2 filesystem signature");
    assert_eq!(one(&ext_superblock(0x4, 0x2, 0x1)), "an ext3 filesystem signature");
    // extents + 64bit + flex_bg, metadata_csum: what mkfs.ext4 writes today.
    assert_eq!(one(&ext_superblock(0x3c, 0x2c2, 0x46b)), "an ext4 filesystem signature");
    assert_eq!(one(&ext_superblock(0, 0x8, 0)), "an ext3/ext4 external journal signature");
}

#[test]
fn ext_magic_alone_in_zeroes_is_not_a_filesystem() {
    // Two bytes are too weak on their own: random data would match one device in 65536.
    let mut s = device();
    s.put_u16(1024 + 56, 0xEF53);
    assert_eq!(s.found(), Vec::<String>::new());
}

#[test]
fn simple_magics() {
    let cases: &[(u64, &[u8], &str)] = &[
        (0, b"XFSB", "an XFS filesystem signature"),
        (65536 + 64, b"_BHRfS_M", "a btrfs filesystem signature"),
        (1024, &0xF2F5_2010u32.to_le_bytes(), "an F2FS filesystem signature"),
        (0, b"LUKS\xba\xbe", "a LUKS encrypted volume header"),
        (32769, b"CD001", "an ISO 9660 filesystem signature"),
        (3, b"NTFS    ", "an NTFS filesystem signature"),
        (3, b"EXFAT   ", "an exFAT filesystem signature"),
        (3, b"-FVE-FS-", "a BitLocker encrypted volume signature"),
        (0x8000, b"SKUL\xba\xbe", "a LUKS2 encrypted volume header (backup copy)"),
        (
            4096 + 24,
            &[0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81],
            "a bcache superblock",
        ),
    ];
    for (offset, magic, want) in cases {
        let mut s = device();
        s.put(*offset, magic);
        assert_eq!(one(&s), *want, "magic at {offset}");
    }
}

#[test]
fn ntfs_boot_sector_is_not_an_mbr() {
    let mut s = device();
    s.put(3, b"NTFS    ").put(510, &[0x55, 0xAA]);
    // Boot code where an MBR keeps its entries must not be read as partitions.
    s.put(446, &[0x80, 1, 1, 0, 0x07, 0xfe, 0xff, 0xff, 0x3f, 0, 0, 0, 0, 0x10, 0, 0]);
    assert_eq!(one(&s), "an NTFS filesystem signature");
}

#[test]
fn fat_boot_sectors_and_not_an_mbr() {
    assert_eq!(one(&fat_boot_sector(true)), "a FAT32 (vfat) filesystem signature");
    assert_eq!(one(&fat_boot_sector(false)), "a FAT12/16 (vfat) filesystem signature");
}

#[test]
fn mbr_with_a_partition() {
    let mut s = device();
    mbr_entry(&mut s, 0, 0x83, 2048, 129024);
    assert_eq!(one(&s), "an MBR (DOS) partition table");
}

#[test]
fn mbr_signature_without_plausible_entries_is_not_a_table() {
    let mut s = device();
    s.put(510, &[0x55, 0xAA]);
    assert_eq!(s.found(), Vec::<String>::new(), "no entries");
    mbr_entry(&mut s, 1, 0x83, 2048, 100);
    s.put(446, &[0x42]); // a boot flag that is neither 0 nor 0x80
    assert_eq!(s.found(), Vec::<String>::new(), "bad boot flag");
    let mut s = device();
    mbr_entry(&mut s, 0, 0x83, u32::MAX - 1, 100);
    assert_eq!(s.found(), Vec::<String>::new(), "starts past the end");
}

#[test]
fn gpt_primary_at_512_or_4096_hides_its_protective_mbr() {
    for at in [512, 4096] {
        let mut s = device();
        mbr_entry(&mut s, 0, 0xEE, 1, u32::MAX);
        s.put(at, b"EFI PART");
        assert_eq!(one(&s), "a GPT partition table", "header at {at}");
    }
}

#[test]
fn gpt_backup_header_alone() {
    for lba in [512, 4096] {
        let mut s = device();
        s.put(64 * MIB - lba, b"EFI PART");
        assert_eq!(one(&s), "a GPT partition table (backup header at the end of the device)");
    }
}

#[test]
fn protective_mbr_without_gpt() {
    let mut s = device();
    mbr_entry(&mut s, 0, 0xEE, 1, u32::MAX);
    assert_eq!(one(&s), "a protective MBR of a GPT partition table");
}

#[test]
fn lvm2_label_in_any_of_the_first_four_sectors() {
    for sector in 0..4 {
        let mut s = device();
        s.put(sector * 512, b"LABELONE").put(sector * 512 + 24, b"LVM2 001");
        assert_eq!(one(&s), "an LVM2 physical volume label", "sector {sector}");
    }
    let mut s = device();
    s.put(4 * 512, b"LABELONE").put(4 * 512 + 24, b"LVM2 001");
    assert_eq!(s.found(), Vec::<String>::new(), "sector 4 is not looked at");
}

#[test]
fn md_superblocks_at_each_version_offset() {
    let size = 64 * MIB + 12345; // not aligned, so the end offsets' rounding matters
    let cases = [
        (0, 1, "1.1"),
        (4096, 1, "1.2"),
        ((size - 8192) & !4095, 1, "1.0"),
        ((size & !65535) - 65536, 0, "0.90"),
    ];
    for (offset, major, version) in cases {
        let mut s = Synth::new(size);
        s.put_u32(offset, 0xa92b_4efc).put_u32(offset + 4, major);
        assert_eq!(one(&s), format!("a Linux RAID (md) superblock (metadata {version})"));
    }
    // md 0.90 from a big-endian host.
    let mut s = Synth::new(size);
    s.put((size & !65535) - 65536, &0xa92b_4efcu32.to_be_bytes());
    assert_eq!(one(&s), "a Linux RAID (md) superblock (metadata 0.90)");
}

#[test]
fn swap_at_the_end_of_the_first_page_for_each_page_size() {
    for page in [4096, 8192, 16384, 65536] {
        for magic in [&b"SWAPSPACE2"[..], b"SWAP-SPACE"] {
            let mut s = device();
            s.put(page - 10, magic);
            assert_eq!(one(&s), "a swap space signature", "page {page}");
        }
    }
    let mut s = device();
    s.put(4096 - 10, b"S1SUSPEND");
    assert_eq!(one(&s), "a swap space signature (holding a hibernation image)");
}

#[test]
fn zfs_uberblock_in_front_and_back_labels() {
    let front = 128 * 1024 + 5 * 1024;
    let back = 64 * MIB - 256 * 1024 + 128 * 1024;
    for (offset, bytes) in [(front, 0x00ba_b10cu64.to_le_bytes()), (back, 0x00ba_b10cu64.to_be_bytes())] {
        let mut s = device();
        s.put(offset, &bytes);
        assert_eq!(one(&s), "a ZFS pool label", "uberblock at {offset}");
    }
}

#[test]
fn several_signatures_are_all_reported() {
    let mut s = ext_superblock(0x4, 0x2c2, 0x46b);
    s.put(0, b"LABELONE").put(24, b"LVM2 001");
    assert_eq!(s.found(), ["an ext4 filesystem signature", "an LVM2 physical volume label"]);
}

#[test]
fn all_zero_device_has_no_signature() {
    assert_eq!(device().found(), Vec::<String>::new());
}

/// splitmix64: deterministic, so a failure here reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let word = self.next().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

#[test]
fn random_data_has_no_signature() {
    // What a device looks like after an earlier write benchmark: it must not be refused.
    let mut rng = Rng(0x1015_ab00);
    for seed in 0..8 {
        let mut s = device();
        rng.fill(&mut s.head);
        rng.fill(&mut s.tail);
        assert_eq!(s.found(), Vec::<String>::new(), "random image {seed}");
    }
}

#[test]
fn small_and_odd_inputs_do_not_panic() {
    assert_eq!(detect_signatures(&[], &[], 0), vec![]);
    assert_eq!(detect_signatures(&[0; 100], &[0; 100], 100), vec![]);
    // A tail longer than the device claims to be, and a size smaller than the head.
    assert_eq!(detect_signatures(&[0; 4096], &[0; 8192], 10), vec![]);
    for size in [4u64, 511, 4096, 8191, 8192, 65536, 131071, 131072, 262144] {
        let mut s = Synth::new(size);
        s.put(0, b"XFSB");
        assert_eq!(one(&s), "an XFS filesystem signature", "size {size}");
    }
}

#[test]
fn signatures_only_in_the_tail_are_found_on_a_small_read() {
    // A device smaller than 1 MiB: head and tail are the same bytes.
    let size = 512 * 1024;
    let mut s = Synth::new(size);
    s.put((size - 8192) & !4095, &0xa92b_4efcu32.to_le_bytes()).put_u32(((size - 8192) & !4095) + 4, 1);
    assert_eq!(one(&s), "a Linux RAID (md) superblock (metadata 1.0)");
}
