//! `--name value` pairs; a name may repeat (its values keep their order).

use std::collections::HashMap;
use std::str::FromStr;

pub struct Args(HashMap<String, Vec<String>>);

impl Args {
    pub fn parse(mut argv: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut values: HashMap<String, Vec<String>> = HashMap::new();
        while let Some(flag) = argv.next() {
            let name = flag
                .strip_prefix("--")
                .ok_or_else(|| format!("expected --name, got {flag:?}"))?;
            let value = argv.next().ok_or_else(|| format!("--{name} needs a value"))?;
            values.entry(name.to_string()).or_default().push(value);
        }
        Ok(Self(values))
    }

    /// Every value given for `name`, in order.
    pub fn all(&self, name: &str) -> &[String] {
        self.0.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.all(name).last().map(String::as_str)
    }

    pub fn required(&self, name: &str) -> Result<&str, String> {
        self.get(name).ok_or_else(|| format!("--{name} is required"))
    }

    pub fn number<T: FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|_| format!("--{name}: not a number: {text:?}")),
        }
    }
}
