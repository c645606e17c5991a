//! The CMOS real-time clock, read once at boot for the wall-clock epoch.

use crate::port::Port;

fn read_register(reg: u8) -> u8 {
    Port::new(0x70).write_u8(reg);
    Port::new(0x71).read_u8()
}

fn bcd(v: u8) -> u8 {
    (v & 0x0f) + (v >> 4) * 10
}

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds since the Unix epoch according to the RTC (UTC assumed).
pub fn read_unix_seconds() -> u64 {
    // Wait out an update in progress so the fields are consistent.
    for _ in 0..1_000_000 {
        if read_register(0x0A) & 0x80 == 0 {
            break;
        }
    }
    let status_b = read_register(0x0B);
    let fix = |v: u8| if status_b & 0x04 == 0 { bcd(v) } else { v };
    let sec = fix(read_register(0x00));
    let min = fix(read_register(0x02));
    let hour_raw = read_register(0x04);
    let mut hour = fix(hour_raw & 0x7f);
    if status_b & 0x02 == 0 && hour_raw & 0x80 != 0 {
        hour = (hour % 12) + 12; // 12-hour mode, PM
    }
    let day = fix(read_register(0x07));
    let month = fix(read_register(0x08));
    let year = 2000 + i64::from(fix(read_register(0x09)));
    let days = days_from_civil(year, i64::from(month), i64::from(day));
    (days * 86_400 + i64::from(hour) * 3600 + i64::from(min) * 60 + i64::from(sec)).max(0) as u64
}
