//! A one-file FUSE filesystem whose reads fail, never answer, or answer slowly on demand: the
//! stand-in for a failing, stuck or slow device on machines without device-mapper.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, LockOwner, MountOption,
    OpenFlags, ReplyAttr, ReplyData, ReplyEntry, ReplyOpen, Request,
};

pub const FILE_NAME: &str = "disk";
pub const FILE_SIZE: u64 = 16 << 20;

/// How reads of the file behave.
#[derive(Clone, Copy)]
pub enum Fault {
    /// Reads at or beyond this offset fail with EIO.
    EioFrom(u64),
    /// The first `n` reads succeed; later ones are never answered.
    HangAfter(u64),
    /// Every read is answered this long after it came (a device slower than a short window).
    Slow(Duration),
    /// Every read takes `delay` on one of `channels`, answered in turn: a server of known
    /// parallelism (more outstanding reads than channels only wait for one).
    Channels { delay: Duration, channels: u32 },
}

struct FaultyFs {
    fault: Fault,
    reads: AtomicU64,
    held: Mutex<Vec<ReplyData>>,
    /// The channels free now (`Fault::Channels`).
    free: Arc<(Mutex<u32>, Condvar)>,
}

fn attr(ino: u64, kind: FileType, size: u64) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size / 512,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind,
        perm: if kind == FileType::Directory { 0o755 } else { 0o644 },
        nlink: 1,
        uid: 0,
        gid: 0,
        rdev: 0,
        flags: 0,
        blksize: 4096,
    }
}

const TTL: Duration = Duration::from_secs(60);

impl Filesystem for FaultyFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if u64::from(parent) == 1 && name == FILE_NAME {
            reply.entry(&TTL, &attr(2, FileType::RegularFile, FILE_SIZE), fuser::Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match u64::from(ino) {
            1 => reply.attr(&TTL, &attr(1, FileType::Directory, 0)),
            2 => reply.attr(&TTL, &attr(2, FileType::RegularFile, FILE_SIZE)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        // Direct I/O: every read reaches this server with its exact offset and size.
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let n = self.reads.fetch_add(1, Ordering::Relaxed);
        match self.fault {
            Fault::EioFrom(from) if offset >= from => reply.error(Errno::EIO),
            Fault::HangAfter(limit) if n >= limit => self.held.lock().expect("lock").push(reply),
            Fault::Slow(delay) => {
                let len = size.min(FILE_SIZE.saturating_sub(offset) as u32) as usize;
                // Answered from a thread of its own, so reads in flight wait together.
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    reply.data(&vec![0x5a; len]);
                });
            }
            Fault::Channels { delay, .. } => {
                let len = size.min(FILE_SIZE.saturating_sub(offset) as u32) as usize;
                let free = Arc::clone(&self.free);
                std::thread::spawn(move || {
                    let (count, freed) = &*free;
                    let mut available =
                        freed.wait_while(count.lock().expect("lock"), |n| *n == 0).expect("lock");
                    *available -= 1;
                    drop(available);
                    std::thread::sleep(delay);
                    *count.lock().expect("lock") += 1;
                    freed.notify_one();
                    reply.data(&vec![0x5a; len]);
                });
            }
            _ => {
                let len = size.min(FILE_SIZE.saturating_sub(offset) as u32) as usize;
                reply.data(&vec![0x5a; len]);
            }
        }
    }
}

/// The filesystem mounted with `fault`, or `None` (said as a skip) where this machine cannot
/// mount it: FUSE needs root and /dev/fuse.
pub fn mount_or_skip(fault: Fault) -> Option<Mounted> {
    if !super::is_root() || !Path::new("/dev/fuse").exists() {
        let missing = if super::is_root() { super::Missing::Fuse } else { super::Missing::Root };
        super::skip!(missing, "needs root and /dev/fuse to mount a FUSE test filesystem");
        return None;
    }
    match Mounted::new(fault) {
        Ok(mounted) => Some(mounted),
        Err(e) => {
            super::skip!(super::Missing::Fuse, "cannot mount a FUSE filesystem here: {e}");
            None
        }
    }
}

/// The mounted filesystem; unmounted (answering every held read with an error) on drop.
pub struct Mounted {
    pub dir: tempfile::TempDir,
    session: Option<fuser::BackgroundSession>,
}

impl Mounted {
    pub fn new(fault: Fault) -> std::io::Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut config = Config::default();
        config.mount_options.push(MountOption::FSName("iolab-faulty".into()));
        config.n_threads = Some(2);
        let channels = if let Fault::Channels { channels, .. } = fault { channels } else { 0 };
        let free = Arc::new((Mutex::new(channels), Condvar::new()));
        let fs = FaultyFs { fault, reads: AtomicU64::new(0), held: Mutex::new(Vec::new()), free };
        let session = fuser::spawn_mount(fs, dir.path(), &config)?;
        Ok(Mounted { dir, session: Some(session) })
    }

    pub fn file(&self) -> PathBuf {
        self.dir.path().join(FILE_NAME)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Mounted {
    /// Aborts the FUSE connection (through fusectl): every held read fails with ENOTCONN, so
    /// threads stuck in the kernel on this filesystem can end.
    pub fn abort(&self) {
        use std::os::unix::fs::MetadataExt;
        let connections = Path::new("/sys/fs/fuse/connections");
        let mounted = std::fs::read_dir(connections).is_ok_and(|mut d| d.next().is_some());
        if !mounted {
            let _ =
                std::process::Command::new("mount").args(["-t", "fusectl", "none"]).arg(connections).status();
        }
        if let Ok(meta) = std::fs::metadata(self.dir.path()) {
            let dev = meta.dev();
            // The connection is named by the kernel's dev_t: major 0, so just the minor.
            let minor = ((dev >> 12) & 0xfff00) | (dev & 0xff);
            let _ = std::fs::write(connections.join(minor.to_string()).join("abort"), "1");
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.abort();
        // A lazy unmount of our own: fuser's unmount can meet EBUSY and leave the mount behind.
        let _ = std::process::Command::new("umount").arg("-l").arg(self.dir.path()).status();
        if let Some(session) = self.session.take() {
            let _ = session.join();
        }
    }
}
