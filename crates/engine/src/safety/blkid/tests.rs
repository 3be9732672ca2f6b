//! libblkid on image files made by the real mkfs tools: it probes a plain file as it does a
//! device, so the formats iolab's own list lacks are tested without root or a loop device.

use std::path::Path;
use std::process::Command;

use iolab_test_support::{skip, Missing};

use super::Libblkid;

/// libblkid, or `None` after recording why the test cannot run.
fn libblkid() -> Option<Libblkid> {
    match Libblkid::load() {
        Ok(blkid) => Some(blkid),
        Err(why) => {
            skip!(Missing::Other, "libblkid cannot be loaded here: {why}");
            None
        }
    }
}

/// Runs `tool` with `args`; `false` (the test skips) when the tool is not installed.
fn made_with(tool: &str, args: &[&Path]) -> bool {
    let found = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file());
    let Some(path) = found else {
        skip!(Missing::Other, "{tool} not found in /usr/sbin, /sbin, /usr/bin or /bin");
        return false;
    };
    let out = Command::new(path).args(args).output().expect("mkfs runs");
    assert!(out.status.success(), "{tool} failed: {}", String::from_utf8_lossy(&out.stderr));
    true
}

fn probe(blkid: &Libblkid, image: &Path) -> Vec<String> {
    let file = std::fs::File::open(image).expect("open the image");
    let len = file.metadata().expect("stat").len();
    blkid.probe(&file, 0, len).expect("probe").into_iter().map(|s| s.what).collect()
}

/// A 4 MiB minix filesystem image in `dir`, or `None` (the test skips) without mkfs.minix.
fn minix_image(dir: &Path) -> Option<std::path::PathBuf> {
    let image = dir.join("minix.img");
    std::fs::write(&image, vec![0u8; 4 << 20]).expect("image");
    made_with("mkfs.minix", &[&image]).then_some(image)
}

#[test]
fn a_minix_filesystem_in_a_file_is_found_by_its_type() {
    let Some(blkid) = libblkid() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(image) = minix_image(dir.path()) else { return };
    let found = probe(&blkid, &image);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("a minix filesystem signature (libblkid"), "{found:?}");
}

#[test]
fn a_cramfs_image_is_found_with_its_label() {
    let Some(blkid) = libblkid() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let content = dir.path().join("content");
    std::fs::create_dir(&content).expect("content dir");
    std::fs::write(content.join("f"), b"kept").expect("a file");
    let image = dir.path().join("cramfs.img");
    if !made_with("mkfs.cramfs", &[Path::new("-n"), Path::new("keep\u{1b}me"), &content, &image]) {
        return;
    }
    let found = probe(&blkid, &image);
    // The label's escape character is shown escaped, never sent to the terminal.
    assert_eq!(found, [r#"a cramfs filesystem signature (libblkid, LABEL "keep\u{1b}me")"#], "{found:?}");
}

#[test]
fn zeroes_hold_nothing_and_a_partition_table_is_one() {
    let Some(blkid) = libblkid() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let image = dir.path().join("disk.img");
    let mut bytes = vec![0u8; 4 << 20];
    std::fs::write(&image, &bytes).expect("image");
    assert!(probe(&blkid, &image).is_empty());

    // One DOS partition from sector 2048 to the end, disk id 0x12345678.
    bytes[440..444].copy_from_slice(&0x1234_5678u32.to_le_bytes());
    let entry = &mut bytes[446..462];
    entry[4] = 0x83;
    entry[8..12].copy_from_slice(&2048u32.to_le_bytes());
    entry[12..16].copy_from_slice(&(8192u32 - 2048).to_le_bytes());
    bytes[510..512].copy_from_slice(&[0x55, 0xAA]);
    std::fs::write(&image, &bytes).expect("image");
    let file = std::fs::File::open(&image).expect("open");
    let found = blkid.probe(&file, 0, 4 << 20).expect("probe");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].partition_table);
    assert_eq!(found[0].what, "a dos partition table (libblkid, PTUUID 12345678)");
}

#[test]
fn a_probe_of_an_extent_sees_only_that_extent() {
    let Some(blkid) = libblkid() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(image) = minix_image(dir.path()) else { return };
    // The image behind 1 MiB of zeroes, as a filesystem on a partition is.
    let mut bytes = vec![0u8; 1 << 20];
    bytes.extend(std::fs::read(&image).expect("read the image"));
    let disk = dir.path().join("disk.img");
    std::fs::write(&disk, &bytes).expect("disk");
    let file = std::fs::File::open(&disk).expect("open");
    assert!(blkid.probe(&file, 0, 1 << 20).expect("the zeroes").is_empty());
    let found = blkid.probe(&file, 1 << 20, 4 << 20).expect("the extent");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].what.starts_with("a minix filesystem signature"), "{found:?}");
}
