//! The lines of one run in one chart (a ladder's rungs, a sweep's curves): the run's own hue at
//! lightnesses far enough apart to tell each line from the others. The shades are made in CIE
//! L*a*b*, where a lightness step is a visible step: the run's colour, then its lightness 22
//! darker, 22 lighter, 11 darker, 11 lighter and so on, kept inside 20..92, the chroma reduced
//! where a shade would fall outside what a screen shows. Any two of a run's first six shades
//! differ by at least 11 in L* alone (CIE76 ΔE ≥ 11; side by side, 2.3 is a just-noticeable
//! difference). Mixing with black and white, as before, gave a ladder's six rungs shades as
//! close as ΔE 6.4 (a grey run's third and fifth).

use plotters::style::RGBColor;

/// Lightness steps from the run's own colour, in the order lines take them.
const STEPS: [f64; 12] = [0.0, -22.0, 22.0, -11.0, 11.0, -33.0, 33.0, -44.0, 44.0, -55.0, 55.0, -66.0];
/// The lightnesses a line may have: darker is near black, lighter near the page's white.
const LIGHTEST: f64 = 92.0;
const DARKEST: f64 = 20.0;

/// The `index`-th line of a run whose colour is `color` (index 0 is the colour itself).
pub fn shade(color: RGBColor, index: usize) -> RGBColor {
    let (l, a, b) = lab(color);
    let lightnesses: Vec<f64> =
        STEPS.iter().map(|step| l + step).filter(|x| (DARKEST..=LIGHTEST).contains(x) || *x == l).collect();
    let target = lightnesses[index % lightnesses.len()];
    if target == l {
        return color;
    }
    // The same hue at that lightness, its chroma cut until a screen can show it.
    let mut chroma = 1.0;
    loop {
        if let Some(rgb) = rgb(target, a * chroma, b * chroma) {
            return rgb;
        }
        chroma -= 0.05;
        if chroma <= 0.0 {
            return rgb(target, 0.0, 0.0).unwrap_or(color);
        }
    }
}

/// CIE76 ΔE: the distance between two sRGB colours in L*a*b* (2.3 is just noticeable side by
/// side). Public so the browser test can measure the colours a page was drawn in.
pub fn delta_e(x: (u8, u8, u8), y: (u8, u8, u8)) -> f64 {
    let ((l1, a1, b1), (l2, a2, b2)) = (lab(RGBColor(x.0, x.1, x.2)), lab(RGBColor(y.0, y.1, y.2)));
    ((l1 - l2).powi(2) + (a1 - a2).powi(2) + (b1 - b2).powi(2)).sqrt()
}

/// sRGB to CIE L*a*b* (D65).
pub fn lab(color: RGBColor) -> (f64, f64, f64) {
    let linear = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.040_45 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let (r, g, b) = (linear(color.0), linear(color.1), linear(color.2));
    let x = (0.412_456_4 * r + 0.357_576_1 * g + 0.180_437_5 * b) / 0.950_47;
    let y = 0.212_672_9 * r + 0.715_152_2 * g + 0.072_175 * b;
    let z = (0.019_333_9 * r + 0.119_192 * g + 0.950_304_1 * b) / 1.088_83;
    let f = |t: f64| if t > 216.0 / 24_389.0 { t.cbrt() } else { (24_389.0 / 27.0 * t + 16.0) / 116.0 };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    (116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz))
}

/// CIE L*a*b* (D65) to sRGB, or `None` outside what sRGB holds.
fn rgb(l: f64, a: f64, b: f64) -> Option<RGBColor> {
    let fy = (l + 16.0) / 116.0;
    let (fx, fz) = (fy + a / 500.0, fy - b / 200.0);
    let inverse =
        |t: f64| if t.powi(3) > 216.0 / 24_389.0 { t.powi(3) } else { (116.0 * t - 16.0) * 27.0 / 24_389.0 };
    let (x, y, z) = (inverse(fx) * 0.950_47, inverse(fy), inverse(fz) * 1.088_83);
    let r = 3.240_454_2 * x - 1.537_138_5 * y - 0.498_531_4 * z;
    let g = -0.969_266 * x + 1.876_010_8 * y + 0.041_556 * z;
    let bl = 0.055_643_4 * x - 0.204_025_9 * y + 1.057_225_2 * z;
    let encode = |c: f64| -> Option<u8> {
        if !(-1e-9..=1.0 + 1e-9).contains(&c) {
            return None;
        }
        let c = c.clamp(0.0, 1.0);
        let s = if c <= 0.003_130_8 { 12.92 * c } else { 1.055 * c.powf(1.0 / 2.4) - 0.055 };
        Some((s * 255.0).round() as u8)
    };
    Some(RGBColor(encode(r)?, encode(g)?, encode(bl)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::PALETTE;

    /// Issue 36: a ladder's six rungs were six shades of one colour, hard to tell apart. Every
    /// run colour's first six shades are at least ΔE 10 from each other.
    #[test]
    fn a_runs_six_lines_stay_tellable_apart() {
        for &base in &PALETTE {
            let shades: Vec<RGBColor> = (0..6).map(|i| shade(base, i)).collect();
            assert_eq!(shades[0], base, "the first line is the run's own colour");
            for i in 0..6 {
                for j in i + 1..6 {
                    let (x, y) = (shades[i], shades[j]);
                    let d = delta_e((x.0, x.1, x.2), (y.0, y.1, y.2));
                    assert!(d >= 10.0, "{base:?}: shades {i} and {j} are ΔE {d:.1} apart");
                }
            }
        }
    }

    #[test]
    fn lab_round_trips() {
        for &c in &PALETTE {
            let (l, a, b) = lab(c);
            assert_eq!(rgb(l, a, b), Some(c));
        }
        let (l, a, b) = lab(RGBColor(255, 255, 255));
        assert!((l - 100.0).abs() < 0.01 && a.abs() < 0.01 && b.abs() < 0.01);
    }
}
