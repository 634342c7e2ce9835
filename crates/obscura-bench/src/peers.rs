//! Figures peers published for the standard workloads, on their own machines: data the tables
//! print next to the measured figures, never a branch of the code.

use crate::report::human;

/// A step a published figure times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// TreePIR's colouring setup.
    Coloring,
    /// TreePIR's client indexing of one leaf.
    Indexing,
    /// The batch-code baseline's placement.
    PbcPlacement,
    /// Total server time for one Merkle proof.
    ServerTotal,
}

impl Step {
    /// The step as the tables name it.
    fn name(self) -> &'static str {
        match self {
            Self::Coloring => "colouring",
            Self::Indexing => "indexing",
            Self::PbcPlacement => "PBC placement",
            Self::ServerTotal => "total server",
        }
    }
}

/// One published time: a step at a tree height.
#[derive(Clone, Copy, Debug)]
pub struct Figure {
    /// The step.
    pub step: Step,
    /// The tree height.
    pub height: u32,
    /// Seconds.
    pub seconds: f64,
}

/// A peer's published figures and where they come from.
#[derive(Clone, Copy, Debug)]
pub struct Publication {
    /// The system and its publication.
    pub source: &'static str,
    /// The setting the figures were taken in.
    pub setting: &'static str,
    /// The figures.
    pub figures: &'static [Figure],
    /// Figures published only as ranges or ratios, as stated.
    pub remarks: &'static [&'static str],
}

impl Publication {
    /// The figure for `step` at height `height`, rendered, or a dash.
    pub fn at(&self, step: Step, height: u32) -> String {
        self.figures
            .iter()
            .find(|f| f.step == step && f.height == height)
            .map_or("-".into(), |f| human(f.seconds))
    }

    /// One line listing the figures of `steps` by height, then the remarks.
    pub fn summary(&self, steps: &[Step]) -> String {
        let listed: Vec<String> = steps
            .iter()
            .map(|&step| {
                let at: Vec<String> = self
                    .figures
                    .iter()
                    .filter(|f| f.step == step)
                    .map(|f| format!("{} (h = {})", human(f.seconds), f.height))
                    .collect();
                format!("{} {}", step.name(), at.join(", "))
            })
            .chain(self.remarks.iter().map(|r| r.to_string()))
            .collect();
        format!(
            "published ({}, {}): {}.",
            self.source,
            self.setting,
            listed.join("; ")
        )
    }
}

/// Shorthand for a figure.
const fn at(step: Step, height: u32, seconds: f64) -> Figure {
    Figure {
        step,
        height,
        seconds,
    }
}

/// TreePIR's own figures (Cao et al., single core).
pub const TREEPIR: Publication = Publication {
    source: "TreePIR, Cao et al.",
    setting: "one core, i9-13900H",
    figures: &[
        at(Step::Coloring, 10, 0.4e-3),
        at(Step::Coloring, 16, 39e-3),
        at(Step::Coloring, 20, 179e-3),
        at(Step::Coloring, 24, 2.7),
        at(Step::Coloring, 30, 179.0),
        at(Step::Indexing, 10, 0.21e-3),
        at(Step::Indexing, 20, 0.38e-3),
        at(Step::Indexing, 36, 0.69e-3),
        at(Step::PbcPlacement, 10, 3.4e-3),
        at(Step::PbcPlacement, 24, 160.0),
    ],
    remarks: &["PBC indexing 4-74 ms"],
};

/// SealPIR+TreePIR and Spiral+TreePIR in the TreePIR paper: server time for one proof.
pub const TREEPIR_E2E: Publication = Publication {
    source: "TreePIR, Cao et al., SealPIR+TreePIR",
    setting: "one core, i9-13900H",
    figures: &[
        at(Step::ServerTotal, 10, 47e-3),
        at(Step::ServerTotal, 20, 1.25),
    ],
    remarks: &[
        "Spiral+TreePIR total server 309-663 ms",
        "storage 3x lower and communication 1.5x lower than PBC",
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_found_by_step_and_height() {
        assert_eq!(TREEPIR.at(Step::Coloring, 24), "2.70 s");
        assert_eq!(TREEPIR.at(Step::Indexing, 16), "-");
        assert_eq!(TREEPIR_E2E.at(Step::ServerTotal, 10), "47.00 ms");
        assert_eq!(
            TREEPIR_E2E.summary(&[Step::ServerTotal]),
            "published (TreePIR, Cao et al., SealPIR+TreePIR, one core, i9-13900H): total server \
             47.00 ms (h = 10), 1.25 s (h = 20); Spiral+TreePIR total server 309-663 ms; storage 3x \
             lower and communication 1.5x lower than PBC."
        );
    }
}
