//! Prints the fingerprint of this machine and the given targets, as `iolab results show` would,
//! then its JSON and the warnings for an O_DIRECT writing run:
//! `cargo run -p iolab-environment --example fingerprint -- /dev/nvme0n1 ./scratch`.

use iolab_environment::{warnings, Environment, TargetUse};

fn main() {
    let targets: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    let env = Environment::capture(&targets);
    for line in env.describe() {
        println!("{line}");
    }
    match serde_json::to_string_pretty(&env) {
        Ok(json) => println!("{json}"),
        Err(error) => eprintln!("cannot serialize: {error}"),
    }
    let uses: Vec<TargetUse> =
        targets.iter().map(|path| TargetUse { path: path.clone(), direct: true, writes: true }).collect();
    for warning in warnings(&env, &uses) {
        println!("warning: {warning}");
    }
}
