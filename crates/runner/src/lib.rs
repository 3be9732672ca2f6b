//! Worker threads, phases (ramp, measure), stop conditions, watchdog and result assembly.
