//! A host's part of `iolab fleet replay`: its requests arrive as bytes (`PUT .../replay`,
//! `replay_wire`, `routes::upload_replay`) and wait in the session; a `Prepare` that names them
//! lays them onto the job's one group once its target is open, and only after every request is
//! checked to lie inside the region opened and on the job's alignment: the coordinator laid
//! them out for this host's region, and the agent never takes its word for it.

use std::sync::Arc;

use iolab_runner::PreparedTarget;
use iolab_spec::{JobSpec, ReplayIo, ReplaySpec};

use crate::protocol::ReplayWire;

use super::error::Failure;

/// Requests uploaded to a session, with the description a `Prepare` gives them.
pub type Replay = (ReplayWire, Arc<[ReplayIo]>);

/// Makes `job`'s one group replay `ios` on the target opened for it (`opened`), once every
/// request is inside its region and on the group's alignment.
pub fn lay(job: &mut JobSpec, opened: &[Vec<PreparedTarget>], (wire, ios): Replay) -> Result<(), Failure> {
    let ([group], [targets]) = (job.groups.as_mut_slice(), opened) else {
        return Err(Failure::bad_request(format!(
            "a replay runs one group, and this job has {}",
            job.groups.len()
        )));
    };
    let [target] = targets.as_slice() else {
        return Err(Failure::bad_request(format!(
            "a replay runs on one target, and this job's group has {}",
            targets.len()
        )));
    };
    let align = group.access.align.0.max(1);
    let region = target.region_size;
    let outside = ios.iter().position(|io| {
        io.offset.saturating_add(u64::from(io.len)) > region
            || (group.target.direct && (io.offset % align != 0 || u64::from(io.len) % align != 0))
    });
    if let Some(index) = outside {
        let io = ios[index];
        return Err(Failure::bad_request(format!(
            "replay request {index} ({} + {} bytes) does not fit {} (a region of {region} bytes, {align}-byte blocks); the coordinator laid the trace out for another target",
            io.offset,
            io.len,
            target.path.display()
        )));
    }
    group.replay = Some(ReplaySpec {
        source: wire.source,
        speed: wire.speed,
        fit: wire.fit,
        skipped: wire.skipped,
        ios,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_engine::target::TargetKind;
    use iolab_spec::{Bytes, Options};

    fn job() -> JobSpec {
        let options = Options { target: Some(vec!["/tmp/t".into()]), ..Options::default() };
        let mut job = iolab_spec::resolve(None, &options).expect("resolves").jobs.remove(0);
        job.groups[0].access.align = Bytes(4096);
        job
    }

    fn opened(region_size: u64) -> Vec<Vec<PreparedTarget>> {
        let file = tempfile::tempfile().expect("temp file");
        let target = PreparedTarget {
            path: "/tmp/t".into(),
            file,
            kind: TargetKind::File,
            notes: Vec::new(),
            region_start: 0,
            region_size,
        };
        vec![vec![target]]
    }

    fn replay(ios: &[ReplayIo]) -> Replay {
        let wire = ReplayWire {
            source: "a.trc".into(),
            speed: Some(2.0),
            fit: Some("wrap".into()),
            skipped: 3,
            requests: ios.len() as u64,
        };
        (wire, Arc::from(ios))
    }

    const IO: ReplayIo = ReplayIo { due_ns: 0, write: true, offset: 0, len: 4096 };

    #[test]
    fn requests_inside_the_region_become_the_groups_replay() {
        let mut job = job();
        let ios = [IO, ReplayIo { offset: 1 << 20, ..IO }];
        lay(&mut job, &opened(2 << 20), replay(&ios)).expect("inside");
        let spec = job.groups[0].replay.as_ref().expect("laid");
        assert_eq!(
            (spec.source.as_str(), spec.speed, spec.skipped, &spec.ios[..]),
            ("a.trc", Some(2.0), 3, &ios[..])
        );
    }

    /// The coordinator laid the trace out for the region it was told of; a request past this
    /// host's region, or off the job's blocks under direct I/O, is refused, never issued.
    #[test]
    fn a_request_outside_the_region_or_off_its_blocks_is_refused() {
        for bad in [ReplayIo { offset: 2 << 20, ..IO }, ReplayIo { offset: 512, ..IO }] {
            let mut job = job();
            let error = lay(&mut job, &opened(2 << 20), replay(&[IO, bad])).expect_err("refused");
            assert!(error.message.starts_with("replay request 1 ("), "{}", error.message);
            assert!(job.groups[0].replay.is_none());
        }
        let mut two = job();
        two.groups.push(two.groups[0].clone());
        let error = lay(&mut two, &opened(2 << 20), replay(&[IO])).expect_err("two groups");
        assert!(error.message.contains("one group"), "{}", error.message);
    }
}
