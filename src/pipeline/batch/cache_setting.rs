//! A job's (or a problem's) `profile_cache` key: `true`/`false`, a cache directory, or a table
//! of [`ProfileCacheOptions`]; and how it combines with the batch-wide `--profile-cache [DIR]`
//! into the options a pass's [`Job`](crate::pipeline::job::Job) gets.

use std::path::PathBuf;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::pipeline::profile_cache::ProfileCacheOptions;

/// What the job file says of the profile cache.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileCacheSetting {
    /// `true`: the cache with its defaults (the batch's `--profile-cache DIR` if given);
    /// `false`: never, even when the batch asks for it.
    On(bool),
    /// `"DIR"`: the cache in this directory.
    Dir(PathBuf),
    /// `{dir, scope, per_fingerprint, audit_share}`.
    Table(ProfileCacheOptions),
}

impl ProfileCacheSetting {
    /// Checks of the values; the message says what to change.
    pub fn validate(&self) -> Result<(), String> {
        let options = match self {
            ProfileCacheSetting::On(_) => return Ok(()),
            ProfileCacheSetting::Dir(dir) if dir.as_os_str().is_empty() => {
                return Err("`profile_cache` is an empty directory name; give a directory, or `true` for the default cache".into());
            }
            ProfileCacheSetting::Dir(_) => return Ok(()),
            ProfileCacheSetting::Table(t) => t,
        };
        if options
            .dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return Err("`profile_cache.dir` is empty; give a directory or leave it out (the default cache)".into());
        }
        if options.per_fingerprint == 0 {
            return Err("`profile_cache.per_fingerprint` = 0 would profile nothing; give 1 or more launches per fingerprint".into());
        }
        let share = options.audit_share;
        if !(share.is_finite() && (0.0..=1.0).contains(&share)) {
            return Err(format!(
                "`profile_cache.audit_share` = {share}; give a share of the hits from 0 to 1 (0.05: one hit in twenty re-profiled)"
            ));
        }
        Ok(())
    }

    /// The options a pass runs with: this setting (if any) over the batch's `default`
    /// (`--profile-cache [DIR]`, which only applies when the job gives no setting); a table or
    /// `true` without a directory takes the batch's. `scope`: the key scope when the setting
    /// names none (a problem's).
    pub fn resolve(
        setting: Option<&ProfileCacheSetting>,
        default: Option<&ProfileCacheOptions>,
        scope: Option<&str>,
    ) -> Option<ProfileCacheOptions> {
        let default_dir = || default.and_then(|d| d.dir.clone());
        let mut options = match setting {
            None => default.cloned()?,
            Some(ProfileCacheSetting::On(false)) => return None,
            Some(ProfileCacheSetting::On(true)) => ProfileCacheOptions {
                dir: default_dir(),
                ..ProfileCacheOptions::default()
            },
            Some(ProfileCacheSetting::Dir(dir)) => ProfileCacheOptions {
                dir: Some(dir.clone()),
                ..ProfileCacheOptions::default()
            },
            Some(ProfileCacheSetting::Table(t)) => {
                let mut t = t.clone();
                if t.dir.is_none() {
                    t.dir = default_dir();
                }
                t
            }
        };
        if options.scope.is_none() {
            options.scope = scope.map(str::to_string);
        }
        Some(options)
    }
}

impl Serialize for ProfileCacheSetting {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ProfileCacheSetting::On(on) => serializer.serialize_bool(*on),
            ProfileCacheSetting::Dir(dir) => dir.serialize(serializer),
            ProfileCacheSetting::Table(t) => t.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ProfileCacheSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Setting;
        impl<'de> Visitor<'de> for Setting {
            type Value = ProfileCacheSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "`true`, `false`, a cache directory, or a table {dir, scope, per_fingerprint, audit_share}",
                )
            }
            fn visit_bool<E: de::Error>(self, on: bool) -> Result<Self::Value, E> {
                Ok(ProfileCacheSetting::On(on))
            }
            fn visit_str<E: de::Error>(self, dir: &str) -> Result<Self::Value, E> {
                Ok(ProfileCacheSetting::Dir(PathBuf::from(dir)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                ProfileCacheOptions::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(ProfileCacheSetting::Table)
            }
        }
        deserializer.deserialize_any(Setting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(json: &str) -> Result<ProfileCacheSetting, String> {
        serde_json::from_str::<ProfileCacheSetting>(json)
            .map_err(|e| e.to_string())
            .and_then(|s| s.validate().map(|()| s))
    }

    #[test]
    fn the_three_forms_read_and_write_back() {
        for (json, want) in [
            ("true", ProfileCacheSetting::On(true)),
            ("false", ProfileCacheSetting::On(false)),
            ("\"cache/\"", ProfileCacheSetting::Dir("cache/".into())),
        ] {
            let s = setting(json).unwrap();
            assert_eq!(s, want);
            assert_eq!(serde_json::to_string(&s).unwrap(), json);
        }
        let t = setting(r#"{"dir": "c", "scope": "mm", "per_fingerprint": 2, "audit_share": 0.1}"#)
            .unwrap();
        let ProfileCacheSetting::Table(ref o) = t else {
            panic!("{t:?}")
        };
        assert_eq!((o.per_fingerprint, o.audit_share), (2, 0.1));
        let back: ProfileCacheSetting =
            serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
        let toml: ProfileCacheSetting = toml::from_str::<toml::Table>("x = { audit_share = 0.5 }")
            .unwrap()["x"]
            .clone()
            .try_into()
            .unwrap();
        assert!(
            matches!(toml, ProfileCacheSetting::Table(o) if o.audit_share == 0.5 && o.per_fingerprint == 1)
        );
    }

    #[test]
    fn bad_values_say_what_to_give() {
        assert!(setting("3").unwrap_err().contains("a cache directory"));
        assert!(setting(r#"{"dirr": "x"}"#).unwrap_err().contains("dirr"));
        assert!(
            setting(r#"{"audit_share": 1.5}"#)
                .unwrap_err()
                .contains("from 0 to 1")
        );
        assert!(
            setting(r#"{"per_fingerprint": 0}"#)
                .unwrap_err()
                .contains("1 or more")
        );
        assert!(setting("\"\"").unwrap_err().contains("empty"));
    }

    #[test]
    fn the_jobs_own_setting_wins_over_the_batchs() {
        let batch = ProfileCacheOptions {
            dir: Some("shared".into()),
            audit_share: 0.2,
            ..Default::default()
        };
        let resolve = |s: Option<ProfileCacheSetting>, scope| {
            ProfileCacheSetting::resolve(s.as_ref(), Some(&batch), scope)
        };
        assert_eq!(resolve(None, None), Some(batch.clone()));
        assert_eq!(resolve(Some(ProfileCacheSetting::On(false)), None), None);
        let on = resolve(Some(ProfileCacheSetting::On(true)), Some("p")).unwrap();
        assert_eq!(on.dir.as_deref(), Some(std::path::Path::new("shared")));
        assert_eq!((on.scope.as_deref(), on.audit_share), (Some("p"), 0.05));
        let dir = resolve(Some(ProfileCacheSetting::Dir("own".into())), None).unwrap();
        assert_eq!(dir.dir.as_deref(), Some(std::path::Path::new("own")));
        let table = resolve(
            Some(ProfileCacheSetting::Table(ProfileCacheOptions {
                scope: Some("mine".into()),
                ..Default::default()
            })),
            Some("p"),
        )
        .unwrap();
        assert_eq!(table.scope.as_deref(), Some("mine"), "its own scope wins");
        assert_eq!(table.dir.as_deref(), Some(std::path::Path::new("shared")));
        assert_eq!(ProfileCacheSetting::resolve(None, None, Some("p")), None);
    }
}
