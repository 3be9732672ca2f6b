//! Tests of the option values: each parses from its text, and a bad one says what to write.

use super::*;

#[test]
fn rw_shares() {
    assert_eq!("randread".parse::<Rw>().unwrap().shares(), (100, 100));
    assert_eq!("RW".parse::<Rw>().unwrap().shares(), (50, 0));
    assert!("trim".parse::<Rw>().unwrap_err().to_string().contains("randwrite"));
}

#[test]
fn bs_split() {
    let split: BsSplit = "4k/70, 64k/30".parse().unwrap();
    assert_eq!(
        split.0,
        vec![BsWeight { bs: Bytes(4096), weight: 70 }, BsWeight { bs: Bytes(65536), weight: 30 }]
    );
    assert!("4k".parse::<BsSplit>().is_err());
    assert!("4k/0".parse::<BsSplit>().is_err());
    assert!("4q/10".parse::<BsSplit>().is_err());
}

#[test]
fn cpu_list() {
    assert_eq!("0,1".parse(), Ok(CpuList(vec![0, 1])));
    assert_eq!("0-3, 8".parse(), Ok(CpuList(vec![0, 1, 2, 3, 8])));
    assert!("3-1".parse::<CpuList>().is_err());
    assert!("a".parse::<CpuList>().is_err());
    assert!("".parse::<CpuList>().is_err());
}

#[test]
fn ring_setup() {
    assert_eq!("defer_taskrun".parse(), Ok(RingSetup::DeferTaskrun));
    assert_eq!("COOP".parse(), Ok(RingSetup::CoopTaskrun));
    assert!("fast".parse::<RingSetup>().unwrap_err().to_string().contains("plain"));
}

#[test]
fn arrival() {
    assert_eq!("Poisson".parse(), Ok(Arrival::Poisson));
    assert_eq!(Arrival::default(), Arrival::Uniform);
    assert!("bursty".parse::<Arrival>().unwrap_err().to_string().contains("uniform or poisson"));
}

#[test]
fn io_limit() {
    assert_eq!("10g".parse(), Ok(IoLimit::Bytes(Bytes(10 << 30))));
    assert_eq!("250kios".parse(), Ok(IoLimit::Ios(250_000)));
    assert_eq!("1000ios".parse(), Ok(IoLimit::Ios(1000)));
    assert!("lots".parse::<IoLimit>().is_err());
    assert_eq!("2.5kios".parse(), Ok(IoLimit::Ios(2500)));
    assert_eq!("9007199254740993ios".parse(), Ok(IoLimit::Ios(9_007_199_254_740_993)));
    for bad in ["infios", "nanios", "-5ios", "1.5ios", "1e30ios", "ios"] {
        assert!(bad.parse::<IoLimit>().is_err(), "{bad}");
    }
}

#[test]
fn seed_beyond_toml_integers_is_a_string() {
    let options = crate::jobfile::parse("seed = \"18446744073709551615\"").unwrap();
    assert_eq!(options.seed, Some(u64::MAX));
    assert_eq!(crate::jobfile::parse("seed = 7").unwrap().seed, Some(7));
    let err = crate::jobfile::parse("seed = \"-1\"").unwrap_err().to_string();
    assert!(err.contains("is not a seed"), "{err}");
}

#[test]
fn slo_list() {
    let list: NanosList = "500us,1ms".parse().unwrap();
    assert_eq!(list.0, vec![Nanos(500_000), Nanos(1_000_000)]);
}

#[test]
fn lists_with_empty_entries_are_refused() {
    let split = "4k/70,,64k/30".parse::<BsSplit>().unwrap_err().to_string();
    assert!(split.contains("an entry is empty") && split.contains("'4k/70,,64k/30'"), "{split}");
    assert!("4k/70,".parse::<BsSplit>().unwrap_err().to_string().contains("empty"));
    assert!("0,,1".parse::<CpuList>().unwrap_err().to_string().contains("empty entry"));
    assert!("500us,,1ms".parse::<NanosList>().unwrap_err().to_string().contains("empty threshold"));
    assert!("".parse::<NanosList>().unwrap_err().to_string().contains("no threshold"));
    let err = crate::jobfile::parse("slo = []").unwrap_err().to_string();
    assert!(err.contains("empty list"), "{err}");
}

#[test]
fn lists_with_a_value_twice_are_refused() {
    assert!("4k/50,4096/50".parse::<BsSplit>().unwrap_err().to_string().contains("4KiB is listed twice"));
    assert!("0-3,2".parse::<CpuList>().unwrap_err().to_string().contains("CPU 2 twice"));
    assert!("1ms,1ms".parse::<NanosList>().unwrap_err().to_string().contains("given twice"));
    // A zero weight leaves its size out, as documented.
    assert_eq!("4k/1,64k/0".parse::<BsSplit>().unwrap().0.len(), 1);
}
