//! The engine options of `obscura build` (`--params`, `--matrix`, `--layout`) for the PIR
//! presets, so that a preset can be compared with a peer parameter for parameter; without them
//! each preset sets up its databases as the workload defines.

use clap::{Args, ValueEnum};
use obscura_pir::keyword::KeywordOptions;
use obscura_pir::lwe::{EngineOptions, Layout};
use obscura_pir::params::{MatrixKind, ParamSet};

use crate::{InvalidArguments, Preset};

/// The engine options of a run.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct EngineArgs {
    /// LWE parameter set of the PIR presets: ypir-1024, hintless-1408 or frodo-1774 (default:
    /// ypir-1024).
    #[arg(long)]
    params: Option<ParamSet>,
    /// Public matrix of the PIR presets: negacyclic (needs ypir-1024) or uniform (plain LWE).
    /// Default: negacyclic where the parameter set allows it.
    #[arg(long)]
    matrix: Option<MatrixKind>,
    /// Records per matrix column for frodo, simple-1g, double-1g, ypir-small, service and
    /// treepir-e2e: square, one-per-column or a count (default: one-per-column for frodo, square
    /// for the others).
    #[arg(long)]
    layout: Option<Layout>,
}

/// How a preset sets up its databases.
#[derive(Clone, Copy, Debug)]
pub struct Engine {
    /// Index databases (`frodo`, `simple-1g`, `double-1g`, `ypir-small`, `service`, the
    /// sub-databases of `treepir-e2e`).
    pub lwe: EngineOptions,
    /// Keyword databases (`chalamet`; the arity is set per run).
    pub keyword: KeywordOptions,
}

impl EngineArgs {
    /// The setup options of `preset`: the options given, the preset's own where none is.
    /// Refuses options for a preset that sets up no LWE database, and `--layout` for the
    /// keyword presets, whose databases always store one record per column.
    pub fn for_preset(&self, preset: Preset) -> Result<Engine, InvalidArguments> {
        let given: Vec<&str> = [
            ("--params", self.params.is_some()),
            ("--matrix", self.matrix.is_some()),
            ("--layout", self.layout.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect();
        if !preset.has_engine() && !given.is_empty() {
            let verb = if given.len() == 1 { "applies" } else { "apply" };
            let pir: Vec<&str> = Preset::value_variants()
                .iter()
                .filter(|p| p.has_engine())
                .map(|p| p.name())
                .collect();
            return Err(InvalidArguments(format!(
                "{} {verb} to the PIR presets ({}), not to {}",
                given.join(" and "),
                pir.join(", "),
                preset.name()
            )));
        }
        if matches!(preset, Preset::Chalamet | Preset::UpdateKeyword) && self.layout.is_some() {
            return Err(InvalidArguments(format!(
                "--layout does not apply to {}: a keyword database stores one record per column",
                preset.name()
            )));
        }
        let layout = match preset {
            Preset::Frodo => Layout::OnePerColumn,
            _ => Layout::Square,
        };
        let params = self.params.unwrap_or_default();
        Ok(Engine {
            lwe: EngineOptions {
                params,
                layout: self.layout.unwrap_or(layout),
                matrix: self.matrix,
                value_bytes: None,
                capacity: None,
            },
            keyword: KeywordOptions {
                params,
                matrix: self.matrix,
                ..KeywordOptions::default()
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(params: Option<&str>, matrix: Option<&str>, layout: Option<&str>) -> EngineArgs {
        EngineArgs {
            params: params.map(|p| p.parse().unwrap()),
            matrix: matrix.map(|m| m.parse().unwrap()),
            layout: layout.map(|l| l.parse().unwrap()),
        }
    }

    /// Without options each preset keeps the workload's setup.
    #[test]
    fn defaults_are_the_workloads() {
        let none = EngineArgs::default();
        let frodo = none.for_preset(Preset::Frodo).unwrap();
        assert_eq!(
            frodo.lwe,
            EngineOptions {
                layout: Layout::OnePerColumn,
                ..EngineOptions::default()
            }
        );
        for preset in [Preset::Simple1g, Preset::Service, Preset::TreepirE2e] {
            let engine = none.for_preset(preset).unwrap();
            assert_eq!(engine.lwe, EngineOptions::default(), "{}", preset.name());
        }
        let chalamet = none.for_preset(Preset::Chalamet).unwrap();
        assert_eq!(chalamet.keyword, KeywordOptions::default());
    }

    #[test]
    fn options_given_replace_the_presets() {
        let plain = args(Some("frodo-1774"), Some("uniform"), Some("4"));
        let engine = plain.for_preset(Preset::Simple1g).unwrap();
        assert_eq!(engine.lwe.params, ParamSet::Frodo1774);
        assert_eq!(engine.lwe.matrix, Some(MatrixKind::Uniform));
        assert_eq!(engine.lwe.layout, Layout::PerColumn(4));
        let keyword = args(Some("frodo-1774"), Some("uniform"), None)
            .for_preset(Preset::Chalamet)
            .unwrap()
            .keyword;
        assert_eq!(
            (keyword.params, keyword.matrix, keyword.arity),
            (ParamSet::Frodo1774, Some(MatrixKind::Uniform), None)
        );
    }

    #[test]
    fn options_that_do_not_apply_are_refused() {
        let layout = args(None, None, Some("square"));
        let error = layout.for_preset(Preset::Chalamet).unwrap_err().to_string();
        assert!(
            error.contains("--layout does not apply to chalamet"),
            "{error}"
        );
        let both = args(Some("ypir-1024"), None, Some("square"));
        let error = both.for_preset(Preset::PsiKkrt).unwrap_err().to_string();
        assert_eq!(
            error,
            "--params and --layout apply to the PIR presets (frodo, simple-1g, chalamet, \
             service, service-sharded, treepir-e2e, double-1g, ypir-small, streamed-setup, \
             update, update-double, update-merkle, update-keyword), \
             not to psi-kkrt"
        );
        assert!(args(None, Some("uniform"), None)
            .for_preset(Preset::TreepirSetup)
            .is_err());
    }
}
