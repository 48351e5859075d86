//! Whether an identifier names a secret: `DB_PASSWORD`, `apiKey`, `client_secret`
//! do; `password_file`, `token_type`, `is_password`, `next_token`, `public_key` do
//! not. Names are judged word by word after splitting snake, kebab, dotted and
//! camel case, because the keyword alone ("pass", "token", "key") is everywhere.

/// Which kind of name a value is assigned to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Family {
    /// `password`, `passwd`, `DB_PASS`, `pwd`: any literal of 3+ characters counts.
    Password,
    /// `api_key`, `client_secret`, `auth_token`: the value must look like a token.
    Secret,
}

/// Whether `name` names a secret of `family`.
pub(crate) fn names(name: &str, family: Family) -> bool {
    let words = words(name);
    let (Some(first), Some(last)) = (words.first(), words.last()) else {
        return false;
    };
    if NOT_A_VALUE.contains(&last.as_str()) || FLAG_VERBS.contains(&first.as_str()) {
        return false;
    }
    match family {
        // The password word must end the name, or be followed by a word that still
        // means the password itself: `password`, `db_password_plain`, not
        // `_PassArg.context` or `password_last_used`.
        Family::Password => words.iter().enumerate().any(|(i, w)| {
            password_word(w)
                && (i + 1 == words.len() || (i + 2 == words.len() && PASSWORD_TAILS.contains(&last.as_str())))
        }),
        Family::Secret => {
            !words.iter().any(|w| NOT_SECRET.contains(&w.as_str()))
                && words.iter().enumerate().any(|(i, w)| {
                    secret_word(w) || (w == "key" && i > 0 && KEY_QUALIFIERS.contains(&words[i - 1].as_str()))
                })
        }
    }
}

/// False when a name is known not to hold a credential, whatever keyword it has:
/// `next_token`, `page_token`, `public_key`, `eos_token`. Used by the generic rule,
/// whose names come from prose as often as from code.
pub(crate) fn may_name_secret(name: &str) -> bool {
    let words = words(name);
    !words.iter().any(|w| NOT_SECRET.contains(&w.as_str()))
        && words.last().is_none_or(|w| !NOT_A_VALUE.contains(&w.as_str()))
}

/// True for a value built from several words one of which is a password word:
/// `challengePassword`, `no-password-required` (labels, not passwords).
pub(crate) fn mentions_password(value: &str) -> bool {
    let words = words(value);
    words.len() > 1 && words.iter().any(|w| password_word(w))
}

fn password_word(w: &str) -> bool {
    #[rustfmt::skip]
    const NOT_PASSWORDS: &[&str] = &[
        "bypass", "compass", "encompass", "surpass", "trespass", "overpass", "underpass", "impass",
        "multipass", "onepass", "twopass", "firstpass", "renderpass", "subpass", "singlepass",
    ];
    matches!(w, "pass" | "pwd" | "pw" | "passcode" | "passwort")
        || w.ends_with("password")
        || w.ends_with("passwd")
        || w.ends_with("passphrase")
        || (w.ends_with("pass") && w.len() <= 10 && !NOT_PASSWORDS.contains(&w))
}

fn secret_word(w: &str) -> bool {
    matches!(w, "secret" | "secrets" | "token" | "credential" | "credentials" | "creds" | "passkey")
        || (w.len() > 5
            && (w.ends_with("token")
                || w.ends_with("secret")
                || w.ends_with("apikey")
                || w.ends_with("accesskey")
                || w.ends_with("secretkey")
                || w.ends_with("privatekey")))
}

/// Words after `password` that keep the name about the password itself.
#[rustfmt::skip]
const PASSWORD_TAILS: &[&str] = &[
    "value", "val", "str", "string", "plain", "plaintext", "raw", "bytes", "enc", "encrypted",
    "hash", "hashed", "confirm", "confirmation", "again", "repeat", "new", "old", "current",
    "default", "1", "2", "3",
];

/// Last words that make the name about a secret rather than the secret itself.
#[rustfmt::skip]
const NOT_A_VALUE: &[&str] = &[
    "file", "files", "path", "dir", "url", "uri", "endpoint", "env", "var", "name", "names", "id",
    "ids", "type", "types", "field", "prompt", "length", "len", "size", "min", "max", "count",
    "policy", "rule", "rules", "regex", "re", "pattern", "label", "hint", "help", "flag", "option",
    "opt", "arg", "args", "param", "header", "prefix", "suffix", "mode", "format", "fmt", "kind",
    "class", "manager", "handler", "input", "widget", "box", "reset", "expiry", "expires",
    "timeout", "ttl", "required", "enabled", "strength", "validator", "hasher", "store", "command",
    "cmd", "callback", "fn", "func", "attempts", "retries", "question", "error", "message", "msg",
    "text", "location", "source", "provider", "method", "scheme", "stdin", "column", "col",
    "index", "idx", "placeholder", "changed", "ref", "algorithm", "alg", "algo", "char", "chars",
    "encoding", "expiration", "lifetime", "limit", "version", "parser", "tokenizer", "list", "map",
    "dict", "kwargs", "pos", "start", "end", "offset", "span", "kinds", "mask", "state", "status",
    "number", "used", "set", "at",
];

/// First words of booleans and functions: `is_password`, `check_token`.
#[rustfmt::skip]
const FLAG_VERBS: &[&str] = &[
    "is", "has", "use", "no", "show", "check", "validate", "verify", "get", "set", "require",
    "requires", "hide", "ask", "reset", "change", "update", "enable", "disable", "allow", "needs",
    "need", "save", "remember", "forgot", "num", "parse", "read", "load", "next", "prev",
];

/// Words that make a token or key something other than a credential: pagination and
/// request ids, tokenizer specials, public halves of key pairs.
#[rustfmt::skip]
const NOT_SECRET: &[&str] = &[
    "public", "publishable", "next", "page", "pagination", "starting", "continuation",
    "idempotency", "request", "sync", "cancel", "cancellation", "lifecycle", "registration",
    "marker", "verification", "bos", "eos", "pad", "unk", "sep", "cls", "special", "sort",
    "partition", "primary", "foreign", "cache", "lookup", "hotkey", "shortcut",
];

/// Words that, before `key`, make it a credential (`api_key`, `signing_key`), where a
/// bare `key` is far more often a dictionary key.
#[rustfmt::skip]
const KEY_QUALIFIERS: &[&str] = &[
    "api", "access", "secret", "private", "signing", "sign", "encryption", "encrypt", "master",
    "session", "app", "application", "client", "license", "licence", "auth", "account", "service",
    "admin", "root", "consumer", "webhook", "hmac", "jwt", "aes", "deploy", "ssh", "gpg", "pgp",
    "shared", "storage", "subscription", "write", "bot", "x", "openai", "anthropic", "stripe",
    "aws", "azure", "gcp", "google", "github", "slack", "twilio", "sendgrid", "mailgun", "cohere",
    "mistral", "groq", "hf", "pinecone",
];

/// Lowercase words of an identifier: split at non-alphanumerics and camelCase humps.
pub(crate) fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_snake_camel_and_dots() {
        assert_eq!(words("spring.datasource.dbPassword"), ["spring", "datasource", "db", "password"]);
        assert_eq!(words("API_KEY"), ["api", "key"]);
        assert_eq!(words("apiKeyV2"), ["api", "key", "v2"]);
    }

    #[test]
    fn names_are_judged_by_their_words() {
        for n in ["password", "DB_PASSWORD", "dbPass", "smtp.pass", "pwd", "userPassword", "password_plain"] {
            assert!(names(n, Family::Password), "{n}");
        }
        for n in [
            "password_file",
            "is_password",
            "bypass",
            "compass",
            "passage",
            "password_key",
            "_PassArg.context",
            "password_last_used",
            "MODULE_PWD_STATE",
        ] {
            assert!(!names(n, Family::Password), "{n}");
        }
        for n in ["api_key", "apiKey", "APIKEY", "client_secret", "GITHUB_TOKEN", "authToken"] {
            assert!(names(n, Family::Secret), "{n}");
        }
        for n in [
            "key",
            "token_type",
            "public_key",
            "tokenizer",
            "secret_name",
            "monkey",
            "NextToken",
            "eos_token",
        ] {
            assert!(!names(n, Family::Secret), "{n}");
        }
    }

    #[test]
    fn password_mentions_are_labels() {
        assert!(mentions_password("challengePassword"));
        assert!(mentions_password("no-password-required"));
        assert!(!mentions_password("Password1"));
        assert!(!mentions_password("hunter2"));
    }
}
