//! Which fabric carries the records between hosts: `GRAPPE_FABRIC`.
//!
//! * `tcp` (the default): grappe's own TCP links;
//! * `ofi`: libfabric's reliable datagram endpoints, through the provider
//!   libfabric prefers (which honours `FI_PROVIDER`), or the one named by
//!   `ofi:PROVIDER` (`ofi:tcp;ofi_rxm`) or `GRAPPE_OFI_PROVIDER`. Only in a
//!   build with the cargo feature `libfabric`.
//!
//! The default is the fastest fabric that works everywhere: between hosts
//! joined by Ethernet, the TCP links beat libfabric's `tcp;ofi_rxm` (a
//! half round trip of 8 bytes in a third to a half of the time, twice the
//! bandwidth, see BENCHMARKS.md), and they need nothing installed. libfabric is the way to networks
//! that TCP does not reach at full speed (InfiniBand, Slingshot, EFA).

use grappe_settings::{SettingError, Vars};

/// The fabric between hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FabricChoice {
    /// grappe's TCP links.
    Tcp,
    /// libfabric, through `provider` (libfabric's choice if `None`).
    #[cfg(feature = "libfabric")]
    Ofi {
        /// The provider asked for.
        provider: Option<String>,
    },
}

#[cfg(feature = "libfabric")]
const EXPECTED: &str = "tcp (the default), ofi, or ofi:PROVIDER (ofi:tcp;ofi_rxm...)";
#[cfg(not(feature = "libfabric"))]
const EXPECTED: &str =
    "tcp (the only fabric of this build: libfabric needs grappe built with the cargo feature `libfabric`)";

impl FabricChoice {
    /// Reads `GRAPPE_FABRIC` (and `GRAPPE_OFI_PROVIDER`).
    pub fn read(vars: Vars<'_>) -> Result<FabricChoice, SettingError> {
        let Some(text) = vars.text("GRAPPE_FABRIC")? else { return Ok(FabricChoice::Tcp) };
        let (name, provider) = match text.trim().split_once(':') {
            Some((name, provider)) => (name, Some(provider)),
            None => (text.trim(), None),
        };
        match (name, provider) {
            ("tcp", None) => Ok(FabricChoice::Tcp),
            #[cfg(feature = "libfabric")]
            ("ofi", provider) => {
                let provider = match provider {
                    Some("") => return Err(SettingError::new("GRAPPE_FABRIC", text.clone(), EXPECTED)),
                    Some(provider) => Some(provider.to_owned()),
                    None => vars.text("GRAPPE_OFI_PROVIDER")?.filter(|p| !p.trim().is_empty()),
                };
                Ok(FabricChoice::Ofi { provider })
            }
            _ => Err(SettingError::new("GRAPPE_FABRIC", text.clone(), EXPECTED)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &'static [(&'static str, &'static str)]) -> Result<FabricChoice, SettingError> {
        let lookup = move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).into());
        FabricChoice::read(Vars::from_lookup(&lookup))
    }

    #[test]
    fn tcp_is_the_default_and_unknown_fabrics_are_named() {
        assert_eq!(read(&[]).unwrap(), FabricChoice::Tcp);
        assert_eq!(read(&[("GRAPPE_FABRIC", "tcp")]).unwrap(), FabricChoice::Tcp);
        let error = read(&[("GRAPPE_FABRIC", "carrier-pigeon")]).unwrap_err().to_string();
        assert!(error.starts_with("GRAPPE_FABRIC=\"carrier-pigeon\": expected tcp"), "{error}");
        let error = read(&[("GRAPPE_FABRIC", "tcp:fast")]).unwrap_err().to_string();
        assert!(error.starts_with("GRAPPE_FABRIC=\"tcp:fast\""), "{error}");
    }

    #[cfg(feature = "libfabric")]
    #[test]
    fn ofi_takes_a_provider_from_the_setting_or_its_own_variable() {
        assert_eq!(read(&[("GRAPPE_FABRIC", "ofi")]).unwrap(), FabricChoice::Ofi { provider: None });
        let named = read(&[("GRAPPE_FABRIC", "ofi:tcp;ofi_rxm"), ("GRAPPE_OFI_PROVIDER", "udp;ofi_rxd")]).unwrap();
        assert_eq!(named, FabricChoice::Ofi { provider: Some("tcp;ofi_rxm".into()) });
        let apart = read(&[("GRAPPE_FABRIC", "ofi"), ("GRAPPE_OFI_PROVIDER", "udp;ofi_rxd")]).unwrap();
        assert_eq!(apart, FabricChoice::Ofi { provider: Some("udp;ofi_rxd".into()) });
        assert!(read(&[("GRAPPE_FABRIC", "ofi:")]).is_err());
    }

    #[cfg(not(feature = "libfabric"))]
    #[test]
    fn ofi_in_a_build_without_libfabric_says_how_to_get_it() {
        let error = read(&[("GRAPPE_FABRIC", "ofi:tcp;ofi_rxm")]).unwrap_err().to_string();
        assert!(error.starts_with("GRAPPE_FABRIC=\"ofi:tcp;ofi_rxm\": expected tcp"), "{error}");
        assert!(error.contains("cargo feature `libfabric`"), "{error}");
    }
}
