//! The table of credential formats recognised by their shape: vendor prefixes,
//! key blocks, auth headers, URLs with passwords.
//!
//! Conventions: `\b` is rewritten to an ASCII word boundary when compiled; a token
//! that may end in `-` closes with `(?:[^A-Za-z0-9_\-]|$)` instead of `\b`; the
//! secret is group `s1` (see `rule.rs`). Keep each rule's keywords in step with its
//! pattern: a rule only runs on text containing one of them.

use super::entropy::{looks_like_secret, reads_like_identifier};
use super::rule::{Rule, Verdict, BLOCK, CONTEXTUAL, PREFIXED};
use super::validate::{
    base64_decode, has_digit, has_letter, has_mixed_case, is_placeholder_word, is_reference,
};
use regex::Captures;

pub(crate) const RULES: &[Rule] = &[
    // ---- key blocks: the whole block goes, header to footer ----
    // A GCP service-account JSON holds the PEM with literal `\n` escapes.
    Rule::secret(
        "gcp_service_account_key",
        BLOCK + 5,
        r#"(?s)"private_key"\s*:\s*"(?P<s1>-----BEGIN[ A-Z]{0,20}PRIVATE KEY-----.*?-----END[ A-Z]{0,20}PRIVATE KEY-----(?:\\n)?)""#,
    )
    .keywords(&["private_key"])
    .multiline(),
    Rule::secret(
        "private_key",
        BLOCK + 1,
        r"(?s)(?P<s1>-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)",
    )
    .exact(&["-----BEGIN"])
    .check(pem_block)
    .multiline(),
    // A block cut off before its footer (a truncated log line, a partial paste):
    // redact the header and the base64 body that follows it.
    Rule::secret(
        "private_key",
        BLOCK,
        r"(?P<s1>-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:(?:\\r|\\n|\r|\n)[ \t]*|[A-Za-z0-9+/=])+)",
    )
    .exact(&["-----BEGIN"])
    .check(pem_body)
    .multiline(),
    Rule::secret(
        "private_key",
        BLOCK,
        r"(?s)(?P<s1>PuTTY-User-Key-File-[0-9]+: .*?Private-(?:MAC|Hash): [0-9a-fA-F]+)",
    )
    .exact(&["PuTTY-User-Key-File-"])
    .multiline(),
    // ---- cloud providers ----
    Rule::secret(
        "aws_access_key_id",
        PREFIXED,
        r"\b(?P<s1>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b",
    )
    .exact(&["AKIA", "ASIA", "ABIA", "ACCA"])
    .check(aws_key_id),
    // The 40-character secret has no prefix: it needs AWS context before it, or an
    // access key id right before it (the console's CSV download).
    Rule::secret(
        "aws_secret_access_key",
        CONTEXTUAL,
        r#"(?i)(?:aws|amazon|secret[_.\-]?access[_.\-]?key)[A-Za-z0-9_.\- ]{0,30}?["']?\s*(?:=>|:=|[:=,]|\s)\s*["']?(?P<s1>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
    )
    .keywords(&["aws", "amazon", "secret"])
    .check(aws_secret),
    Rule::secret(
        "aws_secret_access_key",
        CONTEXTUAL,
        r#"\b(?:AKIA|ASIA)[A-Z0-9]{16}[\s,;:|"']{1,4}(?P<s1>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
    )
    .exact(&["AKIA", "ASIA"])
    .check(aws_secret),
    Rule::secret(
        "google_api_key",
        PREFIXED,
        r"\b(?P<s1>AIza[0-9A-Za-z_\-]{35})(?:[^0-9A-Za-z_\-]|$)",
    )
    .exact(&["AIza"]),
    Rule::secret(
        "google_oauth_client_secret",
        PREFIXED,
        r"\b(?P<s1>GOCSPX-[A-Za-z0-9_\-]{28})(?:[^A-Za-z0-9_\-]|$)",
    )
    .exact(&["GOCSPX-"]),
    Rule::secret(
        "google_oauth_access_token",
        PREFIXED,
        r"\b(?P<s1>ya29\.[A-Za-z0-9_\-]{30,})",
    )
    .exact(&["ya29."]),
    Rule::secret(
        "azure_storage_key",
        CONTEXTUAL,
        r"(?i)\bAccountKey\s*=\s*(?P<s1>[A-Za-z0-9+/]{40,100}={0,2})",
    )
    .keywords(&["accountkey"]),
    Rule::secret(
        "azure_shared_access_key",
        CONTEXTUAL,
        r#"(?i)\bSharedAccess(?:Key|Signature)\s*=\s*(?P<s1>[^;\s"']{16,})"#,
    )
    .keywords(&["sharedaccess"]),
    Rule::secret(
        "azure_sas_signature",
        CONTEXTUAL,
        r"[?&]sig=(?P<s1>[A-Za-z0-9%+/=]{30,})",
    )
    .keywords(&["sig="])
    .check(needs_digit),
    Rule::secret(
        "digitalocean_token",
        PREFIXED,
        r"\b(?P<s1>do[opr]_v1_[a-f0-9]{64})\b",
    )
    .exact(&["dop_v1_", "doo_v1_", "dor_v1_"]),
    Rule::secret(
        "vault_token",
        PREFIXED,
        r"\b(?P<s1>hv[sbr]\.[A-Za-z0-9_\-]{24,})(?:[^A-Za-z0-9_\-]|$)",
    )
    .exact(&["hvs.", "hvb.", "hvr."])
    .check(needs_digit),
    Rule::secret(
        "databricks_token",
        PREFIXED,
        r"\b(?P<s1>dapi[a-f0-9]{32}(?:-[0-9]+)?)\b",
    )
    .exact(&["dapi"])
    .check(needs_digit),
    Rule::secret(
        "doppler_token",
        PREFIXED,
        r"\b(?P<s1>dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44})\b",
    )
    .exact(&["dp."]),
    Rule::secret("pulumi_token", PREFIXED, r"\b(?P<s1>pul-[a-f0-9]{40})\b").exact(&["pul-"]),
    // ---- code hosting and package registries ----
    Rule::secret(
        "github_token",
        PREFIXED,
        r"\b(?P<s1>gh[pousr]_[A-Za-z0-9]{36,255})\b",
    )
    .exact(&["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]),
    Rule::secret(
        "github_fine_grained_token",
        PREFIXED,
        r"\b(?P<s1>github_pat_[A-Za-z0-9_]{50,255})\b",
    )
    .exact(&["github_pat_"]),
    Rule::secret(
        "gitlab_token",
        PREFIXED,
        r"\b(?P<s1>gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent)-[A-Za-z0-9_\-]{20,64})(?:[^A-Za-z0-9_\-]|$)",
    )
    .exact(&[
        "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glsoat-", "glft-", "glimt-",
        "glagent-",
    ]),
    Rule::secret("npm_token", PREFIXED, r"\b(?P<s1>npm_[A-Za-z0-9]{36})\b").exact(&["npm_"]),
    Rule::secret(
        "pypi_token",
        PREFIXED,
        r"\b(?P<s1>pypi-AgE[A-Za-z0-9_\-]{50,})",
    )
    .exact(&["pypi-AgE"]),
    Rule::secret(
        "postman_api_key",
        PREFIXED,
        r"\b(?P<s1>PMAK-[a-f0-9]{24}-[a-f0-9]{34})\b",
    )
    .exact(&["PMAK-"]),
    Rule::secret(
        "atlassian_api_token",
        PREFIXED,
        r"\b(?P<s1>ATATT3[A-Za-z0-9_\-=]{100,})",
    )
    .exact(&["ATATT3"]),
    // ---- chat and messaging ----
    Rule::secret(
        "slack_token",
        PREFIXED,
        r"\b(?P<s1>(?:xox[abprse]|xapp)-[0-9A-Za-z\-]{10,250})",
    )
    .exact(&["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", "xapp-"])
    .check(needs_digit),
    Rule::secret(
        "slack_webhook_url",
        PREFIXED,
        r"(?P<s1>https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,})",
    )
    .keywords(&["hooks.slack.com"]),
    // The first segment is the bot's numeric id in base64, so it starts with the
    // encoding of a digit ("MT" = "1...", ..., "OT" = "9...").
    Rule::secret(
        "discord_bot_token",
        PREFIXED,
        r"(?:^|[^A-Za-z0-9_\-.])(?P<s1>[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6,7}\.[A-Za-z0-9_\-]{27,40})(?:[^A-Za-z0-9_\-.]|$)",
    )
    .exact(&["MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT"])
    .check(discord),
    Rule::secret(
        "telegram_bot_token",
        PREFIXED,
        r"\b(?P<s1>[0-9]{8,10}:AA[A-Za-z0-9_\-]{33})(?:[^A-Za-z0-9_\-]|$)",
    )
    .exact(&[":AA"]),
    Rule::secret(
        "twilio_api_key",
        PREFIXED,
        r"\b(?P<s1>SK[0-9a-fA-F]{32})\b",
    )
    .exact(&["SK"])
    .check(digit_and_letter),
    // The auth token is bare hex: it needs Twilio context or the account SID before it.
    Rule::secret(
        "twilio_auth_token",
        CONTEXTUAL,
        r"(?i)(?:twilio|auth[_ \-]?token|(?-i:\bAC[0-9a-f]{32}))[^\r\n]{0,40}?\b(?P<s1>[0-9a-f]{32})\b",
    )
    .keywords(&["twilio", "auth_token", "auth-token", "auth token", "authtoken"])
    .exact(&["AC"])
    .check(digit_and_letter),
    Rule::secret(
        "sendgrid_api_key",
        PREFIXED,
        r"\b(?P<s1>SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})(?:[^A-Za-z0-9_\-]|$)",
    )
    .exact(&["SG."]),
    Rule::secret(
        "mailgun_api_key",
        PREFIXED,
        r"\b(?P<s1>key-[0-9a-f]{32})\b",
    )
    .exact(&["key-"])
    .check(needs_digit),
    Rule::secret(
        "mailchimp_api_key",
        PREFIXED,
        r"\b(?P<s1>[0-9a-f]{32}-us[0-9]{1,2})\b",
    )
    .exact(&["-us"])
    .check(digit_and_letter),
    // ---- payments and SaaS ----
    Rule::secret(
        "stripe_secret_key",
        PREFIXED,
        r"\b(?P<s1>sk_(?:live|test)_[A-Za-z0-9]{16,247})\b",
    )
    .exact(&["sk_live_", "sk_test_"]),
    Rule::secret(
        "stripe_restricted_key",
        PREFIXED,
        r"\b(?P<s1>rk_(?:live|test)_[A-Za-z0-9]{16,247})\b",
    )
    .exact(&["rk_live_", "rk_test_"]),
    Rule::secret(
        "stripe_webhook_secret",
        PREFIXED,
        r"\b(?P<s1>whsec_[A-Za-z0-9]{24,})\b",
    )
    .exact(&["whsec_"]),
    Rule::secret(
        "square_token",
        PREFIXED,
        r"\b(?P<s1>sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,43})(?:[^A-Za-z0-9_\-]|$)",
    )
    .exact(&["sq0atp-", "sq0csp-"]),
    Rule::secret(
        "shopify_token",
        PREFIXED,
        r"\b(?P<s1>shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32})\b",
    )
    .exact(&["shpat_", "shpss_", "shpca_", "shppa_"]),
    Rule::secret(
        "linear_api_key",
        PREFIXED,
        r"\b(?P<s1>lin_(?:api|oauth)_[A-Za-z0-9]{40})\b",
    )
    .exact(&["lin_api_", "lin_oauth_"]),
    Rule::secret(
        "new_relic_key",
        PREFIXED,
        r"\b(?P<s1>NR(?:AK|AA|II)-[A-Z0-9]{27})\b",
    )
    .exact(&["NRAK-", "NRAA-", "NRII-"]),
    Rule::secret(
        "grafana_token",
        PREFIXED,
        r"\b(?P<s1>glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})",
    )
    .exact(&["glsa_", "glc_"]),
    Rule::secret(
        "age_secret_key",
        PREFIXED,
        r"\b(?P<s1>AGE-SECRET-KEY-1[0-9A-Z]{58})\b",
    )
    .exact(&["AGE-SECRET-KEY-1"]),
    // ---- LLM providers ----
    Rule::secret(
        "anthropic_api_key",
        PREFIXED + 1,
        r"\b(?P<s1>sk-ant-(?:api|admin|oat|sid)[0-9]{2}-[A-Za-z0-9_\-]{20,})(?:[^A-Za-z0-9_\-]|$)",
    )
    .exact(&["sk-ant-"]),
    // Legacy `sk-<48>`, project `sk-proj-...`, service account `sk-svcacct-...`.
    Rule::secret(
        "openai_api_key",
        PREFIXED,
        r"\b(?P<s1>sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,})(?:[^A-Za-z0-9_\-]|$)",
    )
    .exact(&["sk-"])
    .check(random_body),
    Rule::secret(
        "huggingface_token",
        PREFIXED,
        r"\b(?P<s1>hf_[A-Za-z0-9]{30,40})\b",
    )
    .exact(&["hf_"]),
    Rule::secret(
        "replicate_token",
        PREFIXED,
        r"\b(?P<s1>r8_[A-Za-z0-9]{37})\b",
    )
    .exact(&["r8_"])
    .check(needs_digit),
    Rule::secret("groq_api_key", PREFIXED, r"\b(?P<s1>gsk_[A-Za-z0-9]{52})\b").exact(&["gsk_"]),
    Rule::secret(
        "perplexity_api_key",
        PREFIXED,
        r"\b(?P<s1>pplx-[A-Za-z0-9]{48})\b",
    )
    .exact(&["pplx-"]),
    Rule::secret("xai_api_key", PREFIXED, r"\b(?P<s1>xai-[A-Za-z0-9]{80})\b").exact(&["xai-"]),
    Rule::secret(
        "langsmith_api_key",
        PREFIXED,
        r"\b(?P<s1>lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})\b",
    )
    .exact(&["lsv2_"]),
    // ---- generic carriers ----
    Rule::secret(
        "jwt",
        PREFIXED,
        r"\b(?P<s1>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.(?:[A-Za-z0-9_\-]{8,})?)",
    )
    .exact(&["eyJ"]),
    Rule::secret(
        "bearer_token",
        CONTEXTUAL,
        r"(?i)\bbearer\s+(?P<s1>[A-Za-z0-9._~+/\-]{16,}=*)",
    )
    .keywords(&["bearer"])
    .check(opaque),
    // Only when the payload decodes to `user:password`, so "Basic Instructions" stays.
    Rule::secret(
        "basic_auth",
        CONTEXTUAL,
        r"(?i)\bbasic\s+(?P<s1>[A-Za-z0-9+/]{6,}={0,2})(?:[^A-Za-z0-9+/=]|$)",
    )
    .keywords(&["basic"])
    .check(basic_credentials),
    Rule::secret(
        "api_key_header",
        CONTEXTUAL,
        r#"(?i)\b(?:x-api-key|x-apikey|api-key|x-auth-token|x-access-token|x-token|private-token|x-goog-api-key|ocp-apim-subscription-key)["']?\s*:\s*["']?(?P<s1>[A-Za-z0-9._~+/=\-]{16,})"#,
    )
    .keywords(&[
        "api-key",
        "x-apikey",
        "auth-token",
        "access-token",
        "x-token",
        "private-token",
        "subscription-key",
    ])
    .check(opaque),
    // `curl -u user:password ...`: the same credentials as a Basic header, typed.
    Rule::secret(
        "basic_auth",
        CONTEXTUAL,
        r#"\b(?:curl|wget|http|httpie)\b[^\r\n]*?[ \t](?:-u|--user)[ \t=]+["']?[^\s:"']+:(?P<s1>[^\s"']+)"#,
    )
    .keywords(&["curl", "wget", "http"])
    .check(url_password),
    // `scheme://user:password@host`: only the password is replaced, so the scheme,
    // user and host stay readable (`postgres://app:[REDACTED:url_credentials]@db`).
    // The password may hold an unescaped `@`; the last `@` before the host ends it.
    Rule::secret(
        "url_credentials",
        CONTEXTUAL,
        r#"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/?#@\[\]"'<>]{0,128}:(?P<s1>[^\s/?#"'<>]{1,256})@[A-Za-z0-9.\-_\[\]%]"#,
    )
    .keywords(&["://"])
    .check(url_password),
];

fn verdict(ok: bool) -> Verdict {
    if ok {
        Verdict::Accept
    } else {
        Verdict::Reject
    }
}

fn needs_digit(_: &Captures<'_>, s: &str) -> Verdict {
    verdict(has_digit(s))
}

fn digit_and_letter(_: &Captures<'_>, s: &str) -> Verdict {
    verdict(has_digit(s) && has_letter(s))
}

/// Between header and footer a key has only base64 lines and `Name: value`
/// headers; a sentence that quotes both markers has words and spaces.
fn pem_block(_: &Captures<'_>, s: &str) -> Verdict {
    let Some(body) = s.split("-----").nth(2) else {
        return Verdict::Reject;
    };
    let mut base64 = 0;
    for line in body.split(['\n', '\r']).flat_map(|l| l.split("\\n")).flat_map(|l| l.split("\\r")) {
        let line = line.trim();
        if line.contains(':') {
            continue;
        }
        if !line.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')) {
            return Verdict::Reject;
        }
        base64 += line.len();
    }
    verdict(base64 >= 32)
}

/// A header line alone is a mention; a key has a body of base64 after it.
fn pem_body(_: &Captures<'_>, s: &str) -> Verdict {
    let body = s.rsplit("-----").next().unwrap_or("");
    let base64 = body.replace("\\n", "").replace("\\r", "");
    let count = base64.bytes().filter(|b| b.is_ascii_alphanumeric()).count();
    verdict(count >= 32)
}

/// AWS documents its formats with keys ending in `EXAMPLE` / `EXAMPLEKEY`; real
/// keys never contain the word.
fn aws_key_id(_: &Captures<'_>, s: &str) -> Verdict {
    verdict(!s.ends_with("EXAMPLE"))
}

fn aws_secret(_: &Captures<'_>, s: &str) -> Verdict {
    verdict(
        !s.contains("EXAMPLE")
            && has_mixed_case(s)
            && (has_digit(s) || s.contains(['/', '+']))
            && !reads_like_identifier(s),
    )
}

fn discord(_: &Captures<'_>, s: &str) -> Verdict {
    let id = s.split('.').next().unwrap_or("");
    let ok =
        base64_decode(id).is_some_and(|d| (17..=20).contains(&d.len()) && d.iter().all(u8::is_ascii_digit));
    verdict(ok)
}

/// `sk-` is also a common prefix in ordinary identifiers (`sk-learn-...`).
fn random_body(_: &Captures<'_>, s: &str) -> Verdict {
    let body = s.trim_start_matches("sk-");
    verdict(has_digit(body) && has_mixed_case(body) && !reads_like_identifier(body))
}

fn opaque(_: &Captures<'_>, s: &str) -> Verdict {
    verdict(looks_like_secret(s) && has_digit(s) && !is_reference(s))
}

fn basic_credentials(_: &Captures<'_>, s: &str) -> Verdict {
    let ok = base64_decode(s).is_some_and(|d| {
        d.iter().all(|b| b.is_ascii_graphic() || *b == b' ')
            && d.iter().position(|&b| b == b':').is_some_and(|i| i + 1 < d.len())
    });
    verdict(ok)
}

/// `user:pass@host` in documentation is a placeholder, not a password.
fn url_password(_: &Captures<'_>, s: &str) -> Verdict {
    verdict(!is_reference(s) && !is_placeholder_word(s))
}
