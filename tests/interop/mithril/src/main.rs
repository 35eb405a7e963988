//! Test harness: Mithril signer registrations made and checked by Mithril's own `mithril-common`.
//!
//! `generate` creates real signers the way a mithril-signer does: a cold key and an operational
//! certificate for each pool, a Sum6 KES key on disk, BLS keys from Mithril's protocol
//! initializer (`ProtocolInitializer::setup`), and the KES signature over the verification key
//! made by Mithril's `KesSignerStandard`. It prints one JSON line per signer holding the
//! `RegisterSignerMessage` exactly as Mithril serialises it, and the pool's stake.
//!
//! `verify` and `verify-epoch-settings` check registrations as the aggregator's
//! `MithrilSignerRegistrationVerifier` does (mithril-aggregator/src/services/signer_registration/
//! verifier.rs): a fresh `KeyRegWrapper` over the stake distribution per signer, KES evolutions
//! taken from the chain's current KES period (not from the message), then `register`. They print
//! one JSON line per signer with Mithril's verdict.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use kes_summed_ed25519::kes::Sum6Kes;
use kes_summed_ed25519::traits::KesSk;
use mithril_common::crypto_helper::{
    ColdKeyGenerator, KesEvolutions, KesPeriod, KesSignerStandard, OpCert, ProtocolInitializer,
    ProtocolKey, ProtocolKeyRegistration, ProtocolParameters, SignerRegistrationParameters,
    Sum6KesBytes,
};
use mithril_common::entities::{Epoch, Signer};
use mithril_common::messages::{EpochSettingsMessage, RegisterSignerMessage, SignerMessagePart};
use mithril_common::test::crypto_helper::SerDeShelleyFileFormatTestExtension;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{json, Value};

type Res<T> = Result<T, String>;

const USAGE: &str = "usage:
  dmq-mithril-interop generate --signers N --epoch E --start-kes-period S --kes-evolutions V --seed X --dir DIR [--encoding json-hex|bytes-hex]
  dmq-mithril-interop verify --epoch E --current-kes-period P --stake-distribution FILE   (RegisterSignerMessage JSON lines on stdin)
  dmq-mithril-interop verify-epoch-settings --current-kes-period P --stake-distribution FILE   (EpochSettingsMessage JSON on stdin)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("generate") => Options::parse(&args[1..]).and_then(|o| generate(&o)),
        Some("verify") => Options::parse(&args[1..]).and_then(|o| verify_lines(&o)),
        Some("verify-epoch-settings") => {
            Options::parse(&args[1..]).and_then(|o| verify_epoch_settings(&o))
        }
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            eprintln!("dmq-mithril-interop: {message}");
            ExitCode::from(2)
        }
    }
}

struct Options(BTreeMap<String, String>);

impl Options {
    fn parse(args: &[String]) -> Res<Self> {
        let mut map = BTreeMap::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let name = flag
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {flag:?}\n{USAGE}"))?;
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            map.insert(name.to_string(), value.clone());
        }
        Ok(Self(map))
    }

    fn text(&self, name: &str) -> Res<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| format!("--{name} is required\n{USAGE}"))
    }

    fn number(&self, name: &str) -> Res<u64> {
        let text = self.text(name)?;
        text.parse().map_err(|_| format!("--{name} {text:?} is not a number"))
    }
}

/// One pool: a deterministic cold key and KES key from `seed` and the pool's index, its
/// operational certificate starting at `start_kes_period`, both written as the Shelley text
/// envelopes cardano-cli writes (the files `KesSignerStandard` reads).
fn create_pool(dir: &Path, seed: u64, index: u64, start_kes_period: u64) -> Res<(PathBuf, PathBuf, OpCert)> {
    let mut cold_seed = [0u8; 32];
    cold_seed[..8].copy_from_slice(&seed.to_be_bytes());
    cold_seed[8..16].copy_from_slice(&index.to_be_bytes());
    cold_seed[16] = 0xc0;
    let cold_key = ColdKeyGenerator::create_deterministic_keypair(cold_seed);
    let mut kes_seed = cold_seed;
    kes_seed[16] = 0x4e;
    let mut buffer = [0u8; Sum6Kes::SIZE + 4];
    let (kes_secret_key, kes_verification_key) = Sum6Kes::keygen(&mut buffer, &mut kes_seed);
    let mut kes_bytes = Sum6KesBytes([0u8; Sum6Kes::SIZE + 4]);
    kes_bytes.0.copy_from_slice(&kes_secret_key.clone_sk());
    let opcert = OpCert::new(kes_verification_key, index, KesPeriod(start_kes_period), cold_key);
    let kes_path = dir.join(format!("pool{index}.kes.skey"));
    let opcert_path = dir.join(format!("pool{index}.opcert"));
    kes_bytes.to_file(&kes_path).map_err(|e| format!("writing {}: {e:?}", kes_path.display()))?;
    opcert.to_file(&opcert_path).map_err(|e| format!("writing {}: {e:?}", opcert_path.display()))?;
    Ok((kes_path, opcert_path, opcert))
}

fn generate(options: &Options) -> Res<bool> {
    let signers = options.number("signers")?;
    let epoch = Epoch(options.number("epoch")?);
    let start_kes_period = options.number("start-kes-period")?;
    let kes_evolutions = options.number("kes-evolutions")?;
    let seed = options.number("seed")?;
    let dir = PathBuf::from(options.text("dir")?);
    let bytes_hex = match options.0.get("encoding").map(String::as_str) {
        None | Some("json-hex") => false,
        Some("bytes-hex") => true,
        Some(other) => return Err(format!("--encoding {other:?}: expected json-hex or bytes-hex")),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let parameters = ProtocolParameters { m: 100, k: 5, phi_f: 0.65 };
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut out = std::io::stdout().lock();
    for index in 0..signers {
        let (kes_path, opcert_path, opcert) = create_pool(&dir, seed, index, start_kes_period)?;
        let stake = 1_000_000 * (index + 1);
        let current_kes_period = KesPeriod(start_kes_period + kes_evolutions);
        let kes_signer = Arc::new(KesSignerStandard::new(kes_path, opcert_path));
        let initializer =
            ProtocolInitializer::setup(parameters, Some(kes_signer), Some(current_kes_period), stake, &mut rng)
                .map_err(|e| format!("protocol initializer: {e:?}"))?;
        let party_id = opcert
            .compute_protocol_party_id()
            .map_err(|e| format!("pool id: {e:?}"))?;
        let verification_key = ProtocolKey::new(initializer.verification_key_for_concatenation());
        let signature = initializer
            .verification_key_signature_for_concatenation()
            .ok_or("the initializer made no KES signature")?;
        let opcert_key = ProtocolKey::new(opcert.clone());
        let hex = |r: mithril_common::StdResult<String>| r.map_err(|e| format!("encoding: {e:?}"));
        let (vk_text, sig_text, opcert_text) = if bytes_hex {
            (hex(verification_key.to_bytes_hex())?, hex(signature.to_bytes_hex())?, hex(opcert_key.to_bytes_hex())?)
        } else {
            (hex(verification_key.to_json_hex())?, hex(signature.to_json_hex())?, hex(opcert_key.to_json_hex())?)
        };
        let message = RegisterSignerMessage {
            epoch,
            party_id: party_id.clone(),
            verification_key_for_concatenation: vk_text,
            verification_key_signature_for_concatenation: Some(sig_text),
            operational_certificate: Some(opcert_text),
            kes_evolutions: Some(KesEvolutions(kes_evolutions)),
        };
        let line = json!({
            "registration": serde_json::to_value(&message).map_err(|e| e.to_string())?,
            "stake": stake,
            "current_kes_period": start_kes_period + kes_evolutions,
            "pool_id_hex": opcert.compute_protocol_party_id_as_hash(),
        });
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(true)
}

fn read_stake_distribution(options: &Options) -> Res<Vec<(String, u64)>> {
    let path = options.text("stake-distribution")?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    let map: BTreeMap<String, u64> =
        serde_json::from_str(&text).map_err(|e| format!("{path}: not a JSON object of stakes: {e}"))?;
    Ok(map.into_iter().collect())
}

/// The aggregator's verifier, step for step: decode the message part into a `Signer`, a fresh
/// `KeyRegWrapper` over the distribution, KES evolutions from the chain's current KES period,
/// `register`, and the stake of the registered pool.
fn verify_signer(
    part: SignerMessagePart,
    epoch: Epoch,
    current_kes_period: KesPeriod,
    stakes: &[(String, u64)],
) -> Value {
    let claimed = part.party_id.clone();
    let signer: Signer = match part.try_into() {
        Ok(signer) => signer,
        Err(e) => return json!({"party_id": claimed, "ok": false, "error": format!("decode: {e:#}")}),
    };
    let mut registration = ProtocolKeyRegistration::init(&stakes.to_vec(), epoch);
    let kes_evolutions = signer
        .operational_certificate
        .as_ref()
        .map(|opcert| current_kes_period - opcert.get_start_kes_period());
    let party_id = match signer.party_id.as_str() {
        "" => None,
        party_id => Some(party_id.to_string()),
    };
    let result = registration.register(SignerRegistrationParameters {
        party_id,
        operational_certificate: signer.operational_certificate.clone(),
        verification_key_for_concatenation: signer.verification_key_for_concatenation,
        verification_key_signature_for_concatenation: signer.verification_key_signature_for_concatenation,
        kes_evolutions,
    });
    match result {
        Ok(registered) => {
            let stake = stakes.iter().find(|(id, _)| *id == registered).map(|(_, s)| *s);
            json!({"party_id": claimed, "registered_party_id": registered, "stake": stake, "ok": true})
        }
        Err(e) => json!({"party_id": claimed, "ok": false, "error": format!("{e:#}")}),
    }
}

fn verify_lines(options: &Options) -> Res<bool> {
    let epoch = Epoch(options.number("epoch")?);
    let current_kes_period = KesPeriod(options.number("current-kes-period")?);
    let stakes = read_stake_distribution(options)?;
    let mut out = std::io::stdout().lock();
    let mut all_ok = true;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            continue;
        }
        let verdict = match serde_json::from_str::<RegisterSignerMessage>(&line) {
            Ok(message) => verify_signer(to_message_part(message), epoch, current_kes_period, &stakes),
            Err(e) => json!({"party_id": null, "ok": false, "error": format!("not a RegisterSignerMessage: {e}")}),
        };
        all_ok &= verdict["ok"] == json!(true);
        writeln!(out, "{verdict}").map_err(|e| e.to_string())?;
    }
    Ok(all_ok)
}

/// The aggregator turns a `RegisterSignerMessage` into a `Signer` field by field
/// (mithril-aggregator/src/message_adapters/from_register_signer.rs); the message part has the
/// same fields and the same decoding.
fn to_message_part(message: RegisterSignerMessage) -> SignerMessagePart {
    SignerMessagePart {
        party_id: message.party_id,
        verification_key_for_concatenation: message.verification_key_for_concatenation,
        verification_key_signature_for_concatenation: message.verification_key_signature_for_concatenation,
        operational_certificate: message.operational_certificate,
        kes_evolutions: message.kes_evolutions,
    }
}

fn verify_epoch_settings(options: &Options) -> Res<bool> {
    let current_kes_period = KesPeriod(options.number("current-kes-period")?);
    let stakes = read_stake_distribution(options)?;
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).map_err(|e| e.to_string())?;
    let settings: EpochSettingsMessage =
        serde_json::from_str(&text).map_err(|e| format!("not an EpochSettingsMessage: {e}"))?;
    let mut out = std::io::stdout().lock();
    let mut all_ok = true;
    for (list, parts) in [("current_signers", &settings.current_signers), ("next_signers", &settings.next_signers)] {
        for part in parts.iter().cloned() {
            let mut verdict = verify_signer(part, settings.epoch, current_kes_period, &stakes);
            verdict["list"] = json!(list);
            all_ok &= verdict["ok"] == json!(true);
            writeln!(out, "{verdict}").map_err(|e| e.to_string())?;
        }
    }
    Ok(all_ok)
}
