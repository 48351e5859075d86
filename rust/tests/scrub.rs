//! Secret scrubbing through the public API: a generated corpus of labelled secrets,
//! the false-positive rate on real conversation text and source code, idempotence,
//! personal data, and JSON metadata.
//!
//! Everything sits in `mod scrub` so `cargo test scrub` selects these tests too.

mod common;

mod scrub {
    use _core::scrub::{Finding, ScrubOptions, Scrubber};
    use proptest::prelude::*;
    use std::borrow::Cow;
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    // ---------------------------------------------------------------------------
    // Deterministic generation
    // ---------------------------------------------------------------------------

    const HEX: &[u8] = b"0123456789abcdef";
    const DIGITS: &[u8] = b"0123456789";
    const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const PASSWORD_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#%^*+~";

    /// splitmix64: reproducible tokens without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn range(&mut self, lo: usize, hi: usize) -> usize {
            lo + self.below(hi - lo + 1)
        }

        fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
            items[self.below(items.len())]
        }

        fn token(&mut self, alphabet: &[u8], len: usize) -> String {
            (0..len).map(|_| char::from(alphabet[self.below(alphabet.len())])).collect()
        }

        /// A token with at least one character of each class (digit, lower, upper) that
        /// the alphabet has: what real generated keys have, and what an unlucky draw of a
        /// short token would lack.
        fn mixed(&mut self, alphabet: &[u8], len: usize) -> String {
            let mut t: Vec<u8> = self.token(alphabet, len).into_bytes();
            let classes: [fn(&u8) -> bool; 3] =
                [u8::is_ascii_digit, u8::is_ascii_lowercase, u8::is_ascii_uppercase];
            let n = t.len();
            for (i, class) in classes.iter().enumerate() {
                let members: Vec<u8> = alphabet.iter().copied().filter(class).collect();
                if !members.is_empty() {
                    let at = i * n / 3 + self.below(n / 3);
                    t[at] = members[self.below(members.len())];
                }
            }
            String::from_utf8(t).unwrap()
        }

        fn password(&mut self) -> String {
            let len = self.range(8, 16);
            let mut p = self.token(LETTERS, 1);
            p.push_str(&self.mixed(PASSWORD_CHARS, len - 2));
            p.push_str(&self.token(ALNUM, 1));
            p
        }
    }

    fn base64(bytes: &[u8], alphabet: &[u8], pad: bool) -> String {
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..=chunk.len() {
                out.push(char::from(alphabet[((n >> (18 - 6 * i)) & 63) as usize]));
            }
            if pad {
                out.push_str(&"=".repeat(3 - chunk.len()));
            }
        }
        out
    }

    /// One generated secret: `snippet` goes into a sentence; every string in `secrets`
    /// must be gone from the scrubbed output, and `[REDACTED:label]` must be there.
    struct Sample {
        label: &'static str,
        snippet: String,
        secrets: Vec<String>,
        /// The snippet needs a line of its own (env files, YAML, key blocks).
        own_line: bool,
    }

    fn sample(label: &'static str, snippet: String, secret: String) -> Sample {
        Sample { label, snippet, secrets: vec![secret], own_line: false }
    }

    fn on_line(mut s: Sample) -> Sample {
        s.own_line = true;
        s
    }

    /// A simple token: `prefix` + random body.
    fn prefixed(label: &'static str, prefix: &str, body: String) -> Sample {
        let t = format!("{prefix}{body}");
        sample(label, t.clone(), t)
    }

    fn pem(rng: &mut Rng, kind: &str, newline: &str, footer: bool) -> (String, Vec<String>) {
        let lines: Vec<String> = (0..rng.range(3, 8)).map(|_| rng.mixed(B64, 64)).collect();
        let mut body = String::new();
        if kind == "OPENSSH PRIVATE KEY" {
            body.push_str("b3BlbnNzaC1rZXktdjEAAAAA");
        }
        body.push_str(&lines.join(newline));
        let mut text = format!("-----BEGIN {kind}-----{newline}{body}");
        if footer {
            text.push_str(&format!("{newline}-----END {kind}-----"));
        }
        (text, lines)
    }

    type Generator = fn(&mut Rng) -> Sample;

    /// One generator per format; several formats have more than one written form.
    fn generators() -> Vec<Generator> {
        vec![
            |r| {
                let p = r.pick(&["AKIA", "ASIA"]);
                prefixed("aws_access_key_id", p, r.token(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16))
            },
            |r| {
                let s = r.mixed(B64, 40);
                let form = r.pick(&[
                    "aws_secret_access_key = {}",
                    "\"SecretAccessKey\": \"{}\"",
                    "AWS_SECRET_ACCESS_KEY={}",
                    "my aws secret key is {}",
                ]);
                on_line(sample("aws_secret_access_key", form.replace("{}", &s), s))
            },
            |r| {
                let (pem, lines) = pem(r, "PRIVATE KEY", "\\n", true);
                let json = format!(
                "{{\"type\": \"service_account\", \"project_id\": \"demo-{}\", \"private_key_id\": \"{}\", \"private_key\": \"{pem}\\n\", \"client_email\": \"svc@demo.iam.gserviceaccount.com\"}}",
                r.token(DIGITS, 6),
                r.token(HEX, 40)
            );
                Sample { label: "gcp_service_account_key", snippet: json, secrets: lines, own_line: false }
            },
            |r| prefixed("google_api_key", "AIza", r.mixed(B64URL, 35)),
            |r| {
                let key = format!("{}==", r.mixed(B64, 86));
                let s = format!(
                "DefaultEndpointsProtocol=https;AccountName=acct{};AccountKey={key};EndpointSuffix=core.windows.net",
                r.token(DIGITS, 3)
            );
                sample("azure_storage_key", s, key)
            },
            |r| {
                let p = r.pick(&["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]);
                prefixed("github_token", p, r.mixed(ALNUM, 36))
            },
            |r| {
                let body = format!("{}_{}", r.mixed(ALNUM, 22), r.mixed(ALNUM, 59));
                prefixed("github_fine_grained_token", "github_pat_", body)
            },
            |r| prefixed("gitlab_token", "glpat-", r.mixed(B64URL, 20)),
            |r| {
                let body = match r.below(3) {
                    0 => {
                        format!("xoxb-{}-{}-{}", r.token(DIGITS, 12), r.token(DIGITS, 13), r.mixed(ALNUM, 24))
                    }
                    1 => format!(
                        "xoxp-{}-{}-{}-{}",
                        r.token(DIGITS, 12),
                        r.token(DIGITS, 12),
                        r.token(DIGITS, 13),
                        r.token(HEX, 32)
                    ),
                    _ => format!(
                        "xapp-1-A{}-{}-{}",
                        r.token(UPPER_DIGITS, 10),
                        r.token(DIGITS, 13),
                        r.token(HEX, 64)
                    ),
                };
                sample("slack_token", body.clone(), body)
            },
            |r| {
                let url = format!(
                    "https://hooks.slack.com/services/T{}/B{}/{}",
                    r.token(UPPER_DIGITS, 8),
                    r.token(UPPER_DIGITS, 10),
                    r.mixed(ALNUM, 24)
                );
                sample("slack_webhook_url", url.clone(), url)
            },
            |r| {
                let id = format!("1{}", r.token(DIGITS, 17));
                let t = format!(
                    "{}.{}.{}",
                    base64(id.as_bytes(), B64, false),
                    r.mixed(B64URL, 6),
                    r.mixed(B64URL, 38)
                );
                sample("discord_bot_token", t.clone(), t)
            },
            |r| {
                let t = format!("{}:AA{}", r.range(100_000_000, 9_999_999_999), r.mixed(B64URL, 33));
                sample("telegram_bot_token", t.clone(), t)
            },
            |r| {
                let p = r.pick(&["sk_live_", "sk_test_"]);
                let n = r.range(24, 99);
                prefixed("stripe_secret_key", p, r.mixed(ALNUM, n))
            },
            |r| prefixed("stripe_restricted_key", "rk_live_", r.mixed(ALNUM, 99)),
            |r| prefixed("stripe_webhook_secret", "whsec_", r.mixed(ALNUM, 32)),
            |r| {
                let t = match r.below(3) {
                    0 => format!("sk-{}", r.mixed(ALNUM, 48)),
                    1 => format!("sk-proj-{}", r.mixed(B64URL, 156)),
                    _ => format!("sk-svcacct-{}", r.mixed(B64URL, 120)),
                };
                sample("openai_api_key", t.clone(), t)
            },
            |r| prefixed("anthropic_api_key", "sk-ant-api03-", format!("{}AA", r.mixed(B64URL, 93))),
            |r| prefixed("huggingface_token", "hf_", r.mixed(LETTERS, 34)),
            |r| prefixed("npm_token", "npm_", r.mixed(ALNUM, 36)),
            |r| prefixed("pypi_token", "pypi-AgEIcHlwaS5vcmc", r.mixed(B64URL, 70)),
            |r| prefixed("twilio_api_key", "SK", r.mixed(HEX, 32)),
            |r| {
                let token = r.mixed(HEX, 32);
                let s = if r.below(2) == 0 {
                    format!("TWILIO_AUTH_TOKEN={token}")
                } else {
                    format!("Twilio account AC{} with auth token {token}", r.mixed(HEX, 32))
                };
                on_line(sample("twilio_auth_token", s, token))
            },
            |r| {
                prefixed(
                    "sendgrid_api_key",
                    "SG.",
                    format!("{}.{}", r.mixed(B64URL, 22), r.mixed(B64URL, 43)),
                )
            },
            |r| prefixed("mailgun_api_key", "key-", r.mixed(HEX, 32)),
            |r| {
                let t = format!("{}-us{}", r.mixed(HEX, 32), r.range(1, 21));
                sample("mailchimp_api_key", t.clone(), t)
            },
            |r| {
                let payload =
                    format!("{{\"sub\":\"{}\",\"iat\":{}}}", r.token(DIGITS, 10), r.token(DIGITS, 10));
                let t = format!(
                    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{}.{}",
                    base64(payload.as_bytes(), B64URL, false),
                    r.mixed(B64URL, 43)
                );
                sample("jwt", t.clone(), t)
            },
            |r| {
                let kind = r.pick(&[
                    "RSA PRIVATE KEY",
                    "EC PRIVATE KEY",
                    "DSA PRIVATE KEY",
                    "ENCRYPTED PRIVATE KEY",
                    "PRIVATE KEY",
                    "OPENSSH PRIVATE KEY",
                ]);
                let (text, lines) = pem(r, kind, "\n", true);
                on_line(Sample { label: "private_key", snippet: text, secrets: lines, own_line: true })
            },
            |r| {
                // Cut off before the footer, as in a truncated log line.
                let (text, lines) = pem(r, "RSA PRIVATE KEY", "\n", false);
                on_line(Sample { label: "private_key", snippet: text, secrets: lines, own_line: true })
            },
            |r| {
                let t = r.mixed(B64URL, 40);
                let s = r.pick(&[
                    "Authorization: Bearer {}",
                    "curl -H \"Authorization: bearer {}\" https://api.example.com",
                ]);
                sample("bearer_token", s.replace("{}", &t), t)
            },
            |r| {
                let user = r.token(LETTERS, 6).to_lowercase();
                let pw = r.password();
                if r.below(3) == 0 {
                    let cmd = format!("curl -u {user}:{pw} https://api.example.com/v1/items");
                    return sample("basic_auth", cmd, pw);
                }
                let b = base64(format!("{user}:{pw}").as_bytes(), B64, true);
                sample("basic_auth", format!("Authorization: Basic {b}"), b)
            },
            |r| {
                let t = r.mixed(ALNUM, 32);
                let h = r.pick(&["X-API-Key", "x-api-key", "Private-Token", "X-Auth-Token"]);
                sample("api_key_header", format!("{h}: {t}"), t)
            },
            |r| {
                let n = r.range(8, 24);
                let pw = r.mixed(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!*~-_.", n);
                let scheme = r.pick(&[
                    "postgres",
                    "postgresql",
                    "mysql",
                    "mongodb+srv",
                    "redis",
                    "amqp",
                    "https",
                    "ftp",
                ]);
                let url = format!("{scheme}://app_user:{pw}@db-{}.internal:5432/main", r.token(DIGITS, 2));
                sample("url_credentials", url, pw)
            },
            |r| {
                let pw = r.password();
                let form = r.pick(&[
                    "DB_PASSWORD={}",
                    "export SMTP_PASS='{}'",
                    "  password: {}",
                    "  password: \"{}\"",
                    "\"password\": \"{}\",",
                    "password = \"{}\"",
                    "conn = connect(host=\"db\", user=\"app\", password='{}')",
                    "spring.datasource.password={}",
                    "mycli --user admin --password {} --verbose",
                    "mycli --password='{}'",
                    "my password is {}",
                    "login with admin / password: {}",
                    "mysql -u root -p{} main",
                ]);
                on_line(sample("password_assignment", form.replace("{}", &pw), pw))
            },
            |r| {
                let n = r.range(16, 40);
                let t = r.mixed(ALNUM, n);
                let form = r.pick(&[
                    "api_key = \"{}\"",
                    "CLIENT_SECRET={}",
                    "  auth_token: {}",
                    "\"apiKey\": \"{}\"",
                    "deploy --api-key {} --env prod",
                    "const stripeSecret = '{}';",
                ]);
                on_line(sample("secret_assignment", form.replace("{}", &t), t))
            },
            |r| {
                let n = r.range(24, 48);
                let t = r.mixed(B64URL, n);
                let form = r.pick(&[
                    "My API key is {} if you need it.",
                    "the staging access token: {}",
                    "use auth token {} for the nightly job",
                    "The webhook secret was {}.",
                ]);
                sample("generic_secret", form.replace("{}", &t), t)
            },
            |r| prefixed("shopify_token", r.pick(&["shpat_", "shpss_"]), r.mixed(HEX, 32)),
            |r| prefixed("digitalocean_token", "dop_v1_", r.mixed(HEX, 64)),
            |r| prefixed("linear_api_key", "lin_api_", r.mixed(ALNUM, 40)),
            |r| prefixed("postman_api_key", "PMAK-", format!("{}-{}", r.mixed(HEX, 24), r.mixed(HEX, 34))),
            |r| prefixed("databricks_token", "dapi", r.mixed(HEX, 32)),
            |r| prefixed("new_relic_key", "NRAK-", r.token(UPPER_DIGITS, 27)),
            |r| {
                prefixed(
                    "age_secret_key",
                    "AGE-SECRET-KEY-1",
                    r.token(b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
                )
            },
            |r| prefixed("vault_token", "hvs.", r.mixed(B64URL, 90)),
            |r| prefixed("grafana_token", "glsa_", format!("{}_{}", r.mixed(ALNUM, 32), r.token(HEX, 8))),
            |r| prefixed("google_oauth_client_secret", "GOCSPX-", r.mixed(B64URL, 28)),
            |r| prefixed("google_oauth_access_token", "ya29.", r.mixed(B64URL, 120)),
            |r| prefixed("replicate_token", "r8_", r.mixed(ALNUM, 37)),
            |r| prefixed("groq_api_key", "gsk_", r.mixed(ALNUM, 52)),
            |r| prefixed("perplexity_api_key", "pplx-", r.mixed(ALNUM, 48)),
            |r| prefixed("xai_api_key", "xai-", r.mixed(ALNUM, 80)),
            |r| {
                prefixed(
                    "langsmith_api_key",
                    "lsv2_pt_",
                    format!("{}_{}", r.mixed(HEX, 32), r.mixed(HEX, 10)),
                )
            },
            |r| prefixed("square_token", "sq0atp-", r.mixed(B64URL, 22)),
            |r| prefixed("doppler_token", "dp.pt.", r.mixed(ALNUM, 43)),
            |r| prefixed("pulumi_token", "pul-", r.mixed(HEX, 40)),
            |r| prefixed("atlassian_api_token", "ATATT3xFfGF0", r.mixed(B64URL, 180)),
            |r| {
                let sig = r.mixed(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789%", 44);
                let url = format!(
                "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&sp=r&se=2025-01-01&sig={sig}"
            );
                sample("azure_sas_signature", url, sig)
            },
        ]
    }

    /// Sentences a secret is pasted into.
    const INLINE: &[&str] = &[
        "{}",
        "Here it is: {} - please rotate it after the demo.",
        "I accidentally pasted {} into the chat, sorry!",
        "ERROR 2024-05-01T10:00:00Z request failed (401) with {} retry=3",
        "```\n{}\n```",
        "Can you check why {} stopped working yesterday?",
        "(see {})",
        "<p>{}</p>",
        "\"{}\"",
        "- {}\n- and the second item",
    ];

    const OWN_LINE: &[&str] = &[
        "{}",
        "{}\n",
        "Here is my config:\n{}\nThanks for looking!",
        "# settings\n{}\n# end",
        "```\n{}\n```",
    ];

    fn corpus() -> Vec<Sample> {
        let mut rng = Rng(0x5EC2_E75C_2B00);
        let mut out = Vec::new();
        for round in 0..8 {
            for (i, generate) in generators().iter().enumerate() {
                let mut s = generate(&mut rng);
                let templates = if s.own_line { OWN_LINE } else { INLINE };
                let template = templates[(round + i) % templates.len()];
                s.snippet = template.replace("{}", &s.snippet);
                out.push(s);
            }
        }
        out
    }

    fn scrubber() -> Scrubber {
        Scrubber::new(ScrubOptions::default())
    }

    // ---------------------------------------------------------------------------
    // Positive corpus
    // ---------------------------------------------------------------------------

    #[test]
    fn every_generated_secret_is_redacted_with_its_label() {
        let s = scrubber();
        let samples = corpus();
        assert!(samples.len() >= 300, "{}", samples.len());
        let mut failures = Vec::new();
        for sample in &samples {
            let out = s.scrub(&sample.snippet);
            let placeholder = format!("[REDACTED:{}]", sample.label);
            let leaked = sample.secrets.iter().any(|secret| out.contains(secret.as_str()));
            if leaked || !out.contains(&placeholder) {
                failures.push(format!("{}:\n  in:  {:?}\n  out: {:?}", sample.label, sample.snippet, out));
            }
            assert_eq!(s.scrub(&out), out, "not idempotent on {:?}", sample.snippet);
        }
        assert!(
            failures.is_empty(),
            "{} of {} samples failed:\n{}",
            failures.len(),
            samples.len(),
            failures.join("\n")
        );
    }

    /// Long texts are searched only around keywords; the result must not change.
    #[test]
    fn secrets_in_one_long_text_are_all_redacted() {
        let s = scrubber();
        let samples = corpus();
        let filler = "Just some ordinary chat about the weekend, nothing secret here.\n";
        let text: String = samples.iter().map(|x| format!("{}{}\n", filler.repeat(3), x.snippet)).collect();
        assert!(text.len() > 100_000);
        let out = s.scrub(&text);
        for sample in &samples {
            for secret in &sample.secrets {
                assert!(!out.contains(secret.as_str()), "{}: {secret} leaked", sample.label);
            }
        }
        let expected: usize = samples.len();
        let placeholders = out.matches("[REDACTED:").count();
        assert!(placeholders >= expected, "{placeholders} placeholders for {expected} samples");
        assert_eq!(s.scrub(&out), out);
    }

    #[test]
    fn the_corpus_covers_at_least_thirty_labels() {
        let mut labels: Vec<&str> = corpus().iter().map(|s| s.label).collect();
        labels.sort_unstable();
        labels.dedup();
        assert!(labels.len() >= 30, "{labels:?}");
        let all = scrubber().labels();
        for label in labels {
            assert!(all.contains(&label), "{label} is not a scrubber label");
        }
    }

    #[test]
    fn findings_point_at_the_secret() {
        let s = scrubber();
        let text = "token ghp_0123456789abcdefghijABCDEFGHIJ012345 and more";
        let found = s.findings(text);
        assert_eq!(found, [Finding { label: "github_token", start: 6, end: 46 }]);
        assert_eq!(&text[found[0].start..found[0].end], "ghp_0123456789abcdefghijABCDEFGHIJ012345");
    }

    /// The behaviour the module documentation promises, on hand-written inputs.
    #[test]
    fn documented_examples() {
        let s = scrubber();
        let cases = [
            ("postgres://user:p@ss@host/db", "postgres://user:[REDACTED:url_credentials]@host/db"),
            ("my password is hunter2.", "my password is [REDACTED:password_assignment]."),
            (
                "export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345",
                "export GITHUB_TOKEN=[REDACTED:github_token]",
            ),
            (
                "Schlüssel: ghp_0123456789abcdefghijABCDEFGHIJ012345 — ok?",
                "Schlüssel: [REDACTED:github_token] — ok?",
            ),
            ("api_key=sk-proj-AbCdEf0123456789AbCdEf0123456789xyz", "api_key=[REDACTED:openai_api_key]"),
            ("mysql -h db -u root -pS3cret! app", "mysql -h db -u root -p[REDACTED:password_assignment] app"),
            ("DB_PASSWORD=letmein", "DB_PASSWORD=[REDACTED:password_assignment]"),
            ("  password: letmein", "  password: [REDACTED:password_assignment]"),
            ("curl -u admin:S3cretPass https://x", "curl -u admin:[REDACTED:basic_auth] https://x"),
            ("key: 8f3b2c9d1e0a7f6b5c4d3e2f1a0b9c8d", "key: [REDACTED:generic_secret]"),
            // Known gap: an INI line with a bare word reads like a variable assignment.
            ("password = letmein", "password = letmein"),
            // AWS's documentation key.
            ("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
            ("-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----"),
            ("sk-learn-is-great-for-ml-2024-version", "sk-learn-is-great-for-ml-2024-version"),
        ];
        for (input, want) in cases {
            assert_eq!(s.scrub(input), want, "{input:?}");
        }
        let long = format!("{}password=Tr0ub4dor&3 {}", "word ".repeat(2000), "more ".repeat(2000));
        let out = s.scrub(&long);
        assert!(out.contains(" password=[REDACTED:password_assignment] more"));
    }

    #[test]
    fn url_credentials_keep_scheme_user_and_host() {
        let out = scrubber().scrub("DATABASE_URL=postgres://app:s3cr3t-pw@db.internal:5432/main");
        assert_eq!(out, "DATABASE_URL=postgres://app:[REDACTED:url_credentials]@db.internal:5432/main");
    }

    #[test]
    fn variables_and_references_are_not_redacted() {
        let s = scrubber();
        for text in [
            "password = os.environ[\"DB_PASSWORD\"]",
            "let token = get_token();",
            "password = getpass.getpass()",
            "token = tokens[i]",
            "self.password = password",
            "    password: str,",
            "password: Optional[str] = None",
            "DB_PASSWORD=${DB_PASSWORD}",
            "password: \"{{ vault_db_password }}\"",
            "--password PASSWORD    the password to use",
            "api_key = settings.API_KEY",
            "postgres://user:${PGPASSWORD}@localhost/db",
            "token_type = \"bearer\"",
            "if password == \"\":",
            "the key to success is patience",
            "I passed the exam! My password manager is great.",
            "Basic Instructions for the new hire",
        ] {
            assert!(s.findings(text).is_empty(), "{text:?}: {:?}", s.findings(text));
        }
    }

    // ---------------------------------------------------------------------------
    // Inline forms, disguised and cut-short tokens (issue 19, finding 4)
    // ---------------------------------------------------------------------------

    /// One password in every inline form the hostile review found kept. Each form
    /// must lose the value, whichever rule takes it.
    fn inline_password_forms(v: &str) -> Vec<String> {
        vec![
            format!("docker run -e POSTGRES_PASSWORD={v} -d postgres:16"),
            format!("docker run --env MYSQL_ROOT_PASSWORD={v} mysql"),
            format!("PGPASSWORD={v} psql -h db -U app main"),
            format!("DB_PASSWORD={v} ./run.sh --migrate"),
            format!("services:\n  db:\n    environment:\n      - POSTGRES_PASSWORD={v}\n    image: postgres"),
            format!("<config><user>app</user><password>{v}</password></config>"),
            format!("pw: {v}"),
            format!("wifi pw: {v} (guest network)"),
            format!("sshpass -p '{v}' ssh root@10.0.0.5"),
            format!("sshpass -p {v} scp file host:"),
            format!("mysql -u root -p{v} main"),
            format!("mysql -p{v}"),
            format!("mysql -uroot -p'{v}' -h db"),
            format!("MYSQL_PWD={v} mysql -u root"),
            format!("machine api.example.com login bot password {v}"),
            format!("htpasswd -b .htpasswd admin {v}"),
            format!("htpasswd -cb /etc/nginx/.htpasswd admin {v}"),
            format!("htpasswd -nb admin {v}"),
            format!("requirepass {v}"),
            format!("redis-server --requirepass {v} --port 6380"),
            format!("CREATE ROLE app WITH LOGIN PASSWORD '{v}';"),
            format!("ALTER USER app WITH PASSWORD '{v}';"),
            format!("CREATE USER 'app'@'%' IDENTIFIED BY '{v}';"),
            format!("CREATE LOGIN app WITH PASSWORD = '{v}';"),
            format!("the root pw is {v}"),
            format!("login with admin / {v}"),
            format!("Login: admin / {v}."),
            format!("the passphrase for the backup is {v}"),
            format!("The password for the staging db is {v}, don't share it"),
        ]
    }

    #[test]
    fn inline_password_forms_are_redacted() {
        let s = scrubber();
        let mut kept = Vec::new();
        for v in ["S3cure!Pass2024", "hunter2Xq9", "Tr0ub4dor&3", "Kx7#mQ2@vL"] {
            for text in inline_password_forms(v) {
                let out = s.scrub(&text);
                if out.contains(v) || !out.contains("[REDACTED:") {
                    kept.push(format!("{text:?} -> {out:?}"));
                }
                assert_eq!(s.scrub(&out), out, "not idempotent on {text:?}");
            }
        }
        assert!(kept.is_empty(), "{} kept:\n{}", kept.len(), kept.join("\n"));
    }

    #[test]
    fn cookies_and_otp_uris_are_redacted() {
        let s = scrubber();
        let session = "k3x9Qm2vR7pL0zW4nB8d";
        let otp = "JBSWY3DPEHPK3PXP";
        let cases = [
            (format!("Cookie: sessionid={session}; theme=dark"), session),
            (format!("curl -H 'Cookie: csrftoken=x1; sessionid={session}' https://x"), session),
            (format!("Set-Cookie: PHPSESSID={session}; Path=/; HttpOnly"), session),
            (format!("\"Cookie\": \"sid={session}\""), session),
            (format!("otpauth://totp/ACME:alice@acme.io?secret={otp}&issuer=ACME"), otp),
            (format!("scan otpauth://totp/x?issuer=ACME&secret={otp}&digits=6"), otp),
        ];
        for (text, secret) in cases {
            let out = s.scrub(&text);
            assert!(!out.contains(secret), "{text:?} -> {out:?}");
        }
        assert_eq!(s.scrub(&format!("Cookie: sessionid={session}; theme=dark")), "Cookie: [REDACTED:cookie]");
    }

    /// Known-format tokens, random bodies.
    fn known_tokens() -> Vec<String> {
        let mut r = Rng(0x1919);
        vec![
            format!("ghp_{}", r.mixed(ALNUM, 36)),
            format!("sk-proj-{}", r.mixed(B64URL, 48)),
            format!("sk-{}", r.mixed(ALNUM, 48)),
            format!("AKIA{}", r.token(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
            format!("glpat-{}", r.mixed(B64URL, 20)),
            format!("xoxb-{}-{}", r.token(DIGITS, 12), r.mixed(ALNUM, 24)),
        ]
    }

    /// The token split in two by something a reader does not see (or barely does).
    #[test]
    fn split_and_disguised_tokens_are_redacted_whole() {
        let s = scrubber();
        for token in known_tokens() {
            let half = token.len() / 2;
            let (a, b) = token.split_at(half);
            let (prefix, body) = token.split_at(token.find(['_', '-']).map_or(4, |i| i + 1));
            let fullwidth: String =
                prefix.chars().map(|c| char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap()).collect();
            let forms = [
                format!("{a}\u{200B}{b}"),
                format!("{a}\u{2060}{b}"),
                format!("{a}\u{00AD}{b}"),
                format!("{a}\n{b}"),
                format!("{a}\r\n{b}"),
                format!("{}%5F{}", &prefix[..prefix.len() - 1], body),
                format!("{fullwidth}{body}"),
                token.replace(&token[1..2], &format!("%{:02X}", token.as_bytes()[1])),
            ];
            for form in forms {
                let text = format!("the key: {form} (rotate it)");
                let out = s.scrub(&text);
                // Neither half survives, and the text around it is kept as written.
                let tail = &token[token.len() - 8..];
                let head_body = &body[..8.min(body.len())];
                assert!(!out.contains(tail) && !out.contains(head_body), "{form:?} -> {out:?}");
                assert!(out.starts_with("the key: [REDACTED:") && out.ends_with("] (rotate it)"), "{out:?}");
                assert_eq!(s.scrub(&out), out);
            }
        }
    }

    #[test]
    fn disguises_are_matched_but_the_text_around_them_is_kept() {
        let s = scrubber();
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let text = format!("Ｈｅｌｌｏ — ｇｈｐ＿{}\u{200B} café ﬁne", &token[4..]);
        assert_eq!(s.scrub(&text), "Ｈｅｌｌｏ — [REDACTED:github_token]\u{200B} café ﬁne");
        let url = format!("https://x.io/a%20b?t=ghp%5F{}&q=%2F", &token[4..]);
        assert_eq!(s.scrub(&url), "https://x.io/a%20b?t=[REDACTED:github_token]&q=%2F");
    }

    #[test]
    fn cut_short_tokens_with_a_known_prefix_are_redacted() {
        let s = scrubber();
        for token in known_tokens() {
            let cut = &token[..token.len().min(24).max(token.len() * 2 / 3)];
            for text in [cut.to_owned(), format!("token {cut}… (truncated)"), format!("\"{cut}...\"")] {
                let out = s.scrub(&text);
                assert!(!out.contains(&cut[cut.len() - 8..]), "{text:?} -> {out:?}");
            }
        }
        // Labelled as the format they belong to.
        assert_eq!(s.scrub("ghp_Xq7Lm2Pz9Kw4Rt8N"), "[REDACTED:github_token]");
    }

    /// Near misses of the new forms: ordinary text, references and identifiers.
    #[test]
    fn inline_forms_leave_look_alikes_alone() {
        let s = scrubber();
        for text in [
            "docker run -e POSTGRES_PASSWORD=$PW -d postgres",
            "PGPASSWORD=\"${PGPASSWORD}\" psql",
            "docker run -e POSTGRES_HOST_AUTH_METHOD=trust postgres",
            "MAX_TOKENS=4096 ./run",
            "<password></password> and <password>{{ pw }}</password>",
            "<key>name</key>",
            "the requirepass directive sets a password",
            "ssh -p 2222 root@host",
            "sshpass -f ~/.pw ssh host",
            "htpasswd -c .htpasswd admin",
            "identified by their names",
            "/// Opens the named pipe identified by `addr2`.",
            "the password is correct",
            "my pw is weak",
            "login with Google / GitHub",
            "sign in at 10:30am",
            "login with user/pass",
            "log in with OAuth2 / OpenID",
            "Cookie: chocolate chip",
            "Cookie: theme=dark; lang=en",
            "task-ghp_ is not a token",
            "sk-learn-classifier-v2 is a model",
            "hf_hub_download(repo_id)",
            "AKIAIOSFODNN7EXAMPLE",
            "50% off, 100%5 done, a%20b",
            "the ASIAN2024 summit",
            "Ｈｅｌｌｏ ｗｏｒｌｄ",
        ] {
            assert!(s.findings(text).is_empty(), "{text:?}: {:?}", s.findings(text));
        }
    }

    /// Scope, session id and kind are stored and shown as given, so one holding a
    /// secret is refused with a typed error.
    #[test]
    fn labels_holding_a_secret_are_refused() {
        use _core::entry::validate_label;
        use _core::Error;
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        for label in [
            token.to_owned(),
            format!("user:{token}"),
            "api_key=a8f3b2c9d1e07f6a".to_owned(),
            "ｇｈｐ＿0123456789abcdefghijABCDEFGHIJ012345".to_owned(),
        ] {
            for name in ["scope", "session_id", "kind"] {
                let err = validate_label(name, &label).expect_err(&label);
                assert!(
                    matches!(&err, Error::InvalidInput(m) if m.contains(name) && m.contains("secret")),
                    "{err}"
                );
                assert!(!err.to_string().contains(token), "the error repeats the secret: {err}");
            }
        }
        for label in [
            "user:alice",
            "project/2024-q3",
            "sess_01HZX3K9V2ABCDEF",
            "550e8400-e29b-41d4-a716-446655440000",
            "note",
            "chat:turn",
            "team:key-accounts",
        ] {
            assert!(validate_label("scope", label).is_ok(), "{label}");
        }
    }

    // ---------------------------------------------------------------------------
    // Fast path and idempotence
    // ---------------------------------------------------------------------------

    #[test]
    fn text_without_secrets_is_borrowed() {
        let s = scrubber();
        for text in [
            "",
            "Hey Mel! Good to see you! How have you been?",
            "The key takeaway: pass the token of appreciation to the team.",
            "Error: connection refused at 10.0.0.1:5432",
            "[REDACTED:github_token] was already removed",
        ] {
            assert!(matches!(s.scrub(text), Cow::Borrowed(_)), "{text:?}");
        }
    }

    fn secret_pool() -> Vec<String> {
        corpus().into_iter().step_by(7).map(|s| s.snippet).collect()
    }

    fn fragment() -> impl Strategy<Value = String> {
        let pool = secret_pool();
        prop_oneof![
            "[ -~]{0,24}",
            // Dense in the characters rules care about.
            "[a-zA-Z0-9 :=@/\"'_.\\-\n]{0,40}",
            "\\PC{0,12}",
            prop::sample::select(pool),
            prop::sample::select(vec![
                "password=",
                "password: ",
                "api_key = \"",
                "\"",
                "'",
                "token ",
                " is ",
                "Bearer ",
                "://",
                "user:",
                "@",
                "-----BEGIN RSA PRIVATE KEY-----\n",
                "-----END RSA PRIVATE KEY-----",
                "\n",
                "[REDACTED:",
                "]",
                "[REDACTED:jwt]",
                "[REDACTED:password_assignment]",
                "4111 1111 1111 1111",
                "alice@example.com",
            ])
            .prop_map(str::to_owned),
        ]
    }

    proptest! {
        // No failure file: it would be written into the source tree; a failing case is
        // printed, shrunk, with its seed.
        #![proptest_config(ProptestConfig {
            cases: 400,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn scrubbing_is_idempotent(parts in prop::collection::vec(fragment(), 0..10)) {
            let text = parts.concat();
            for options in [ScrubOptions::default(), ScrubOptions { secrets: true, pii: true }] {
                let s = Scrubber::new(options);
                let once = s.scrub(&text).into_owned();
                let twice = s.scrub(&once);
                prop_assert_eq!(&*twice, &*once);
                prop_assert!(matches!(twice, Cow::Borrowed(_)));
            }
        }
    }

    // ---------------------------------------------------------------------------
    // Personal data (opt-in)
    // ---------------------------------------------------------------------------

    fn with_pii() -> Scrubber {
        Scrubber::new(ScrubOptions { secrets: true, pii: true })
    }

    #[test]
    fn pii_is_off_by_default() {
        let text = "mail alice@example.com or call +1 415 555 0100";
        assert!(scrubber().findings(text).is_empty());
        let labels: Vec<&str> = with_pii().findings(text).iter().map(|f| f.label).collect();
        assert_eq!(labels, ["email", "phone_number"]);
    }

    #[test]
    fn pii_rules_check_their_checksums() {
        let s = with_pii();
        let cases = [
            ("card 4111 1111 1111 1111 on file", Some("credit_card")),
            ("card 4111-1111-1111-1111 on file", Some("credit_card")),
            ("amex 378282246310005 on file", Some("credit_card")),
            ("order 4111 1111 1111 1112 shipped", None),
            ("ref 1234567812345678 shipped", None),
            ("IBAN GB82 WEST 1234 5698 7654 32 please", Some("iban")),
            ("IBAN DE89370400440532013000 please", Some("iban")),
            ("IBAN DE89370400440532013001 please", None),
            ("SSN 123-45-6789 on the form", Some("us_ssn")),
            ("SSN 666-45-6789 on the form", None),
            ("call (415) 555-0100 today", Some("phone_number")),
            ("call +44 20 7946 0958 today", Some("phone_number")),
            ("it was 2023-05-08 at 10:30", None),
            ("write to bob.smith+news@mail.example.co.uk", Some("email")),
        ];
        for (text, want) in cases {
            let got: Vec<&str> = s.findings(text).iter().map(|f| f.label).collect();
            assert_eq!(got, want.into_iter().collect::<Vec<_>>(), "{text:?}");
        }
        assert_eq!(s.scrub("card 4111 1111 1111 1111 on file"), "card [REDACTED:credit_card] on file");
    }

    // ---------------------------------------------------------------------------
    // JSON metadata
    // ---------------------------------------------------------------------------

    #[test]
    fn json_strings_keys_and_keyed_values_are_scrubbed() {
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let mut value = serde_json::json!({
            "note": format!("deploy with {token}"),
            "password": "hunter2!x",
            "nested": [{"api_key": "a8f3b2c9d1e07f6a"}, 42, null, "plain"],
            token: "token as a key",
            "title": "hunter2!x",
        });
        scrubber().scrub_json(&mut value);
        assert_eq!(
            value,
            serde_json::json!({
                "note": "deploy with [REDACTED:github_token]",
                "password": "[REDACTED:password_assignment]",
                "nested": [{"api_key": "[REDACTED:secret_assignment]"}, 42, null, "plain"],
                "[REDACTED:github_token]": "token as a key",
                "title": "hunter2!x",
            })
        );
    }

    // ---------------------------------------------------------------------------
    // False positives on real text
    // ---------------------------------------------------------------------------

    fn cargo_registry() -> Option<PathBuf> {
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
        let src = home.join("registry").join("src");
        let mut dirs: Vec<PathBuf> =
            std::fs::read_dir(src).ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        dirs.into_iter().next()
    }

    fn rust_files(crate_prefix: &str, max_lines: usize) -> Vec<(String, String)> {
        let Some(registry) = cargo_registry() else {
            return Vec::new();
        };
        let mut crates: Vec<PathBuf> = std::fs::read_dir(&registry)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        crates
            .retain(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(crate_prefix)));
        crates.sort();
        let Some(root) = crates.into_iter().next() else {
            return Vec::new();
        };
        let mut files = Vec::new();
        let mut stack = vec![root.join("src")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "rs") {
                    files.push(p);
                }
            }
        }
        files.sort();
        let mut out = Vec::new();
        let mut lines = 0;
        for f in files {
            if lines >= max_lines {
                break;
            }
            if let Ok(text) = std::fs::read_to_string(&f) {
                lines += text.lines().count();
                out.push((f.display().to_string(), text));
            }
        }
        out
    }

    /// Standard-library modules that handle passwords, tokens and keys all day.
    fn python_files() -> Vec<(String, String)> {
        let root = Path::new("/root/.pyenv/versions/3.11.7/lib/python3.11");
        [
            "smtplib.py",
            "ftplib.py",
            "imaplib.py",
            "poplib.py",
            "netrc.py",
            "getpass.py",
            "hmac.py",
            "secrets.py",
            "urllib/request.py",
            "http/client.py",
            "ssl.py",
            "configparser.py",
            "base64.py",
            "tokenize.py",
        ]
        .iter()
        .filter_map(|f| {
            let p = root.join(f);
            Some((p.display().to_string(), std::fs::read_to_string(&p).ok()?))
        })
        .collect()
    }

    /// Real text with no real secrets: (name, text) pairs and the total line count.
    fn negative_corpus() -> (Vec<(String, String)>, usize) {
        let mut docs: Vec<(String, String)> = crate::common::locomo_turns()
            .into_iter()
            .enumerate()
            .map(|(i, t)| (format!("locomo turn {i}"), t))
            .collect();
        for prefix in ["regex-1.", "serde_json-1.", "tantivy-0."] {
            docs.extend(rust_files(prefix, 4000));
        }
        docs.extend(python_files());
        let lines = docs.iter().map(|(_, t)| t.lines().count().max(1)).sum();
        (docs, lines)
    }

    fn false_positives(s: &Scrubber, docs: &[(String, String)]) -> Vec<String> {
        let mut out = Vec::new();
        for (name, text) in docs {
            for f in s.findings(text) {
                let from = text[..f.start].rfind('\n').map_or(0, |i| i + 1);
                let to = text[f.end..].find('\n').map_or(text.len(), |i| f.end + i);
                out.push(format!("{name}: {}: {:?}", f.label, &text[from..to]));
            }
        }
        out
    }

    #[test]
    fn false_positive_rate_on_chat_and_code_is_below_one_in_2000_lines() {
        let (docs, lines) = negative_corpus();
        if lines < 2000 {
            eprintln!("skipped: only {lines} lines of negative corpus on this machine");
            return;
        }
        let fps = false_positives(&scrubber(), &docs);
        let rate = fps.len() as f64 / lines as f64;
        eprintln!(
            "secrets: {} false redactions in {lines} lines ({:.2} per 2,000 lines)",
            fps.len(),
            rate * 2000.0
        );
        assert!(
            fps.len() * 2000 <= lines,
            "{} false redactions in {lines} lines = {:.2} per 2,000 lines:\n{}",
            fps.len(),
            rate * 2000.0,
            fps.join("\n")
        );
    }

    #[test]
    fn pii_false_positive_rate_on_chat_is_below_one_in_2000_lines() {
        let docs: Vec<(String, String)> = crate::common::locomo_turns()
            .into_iter()
            .enumerate()
            .map(|(i, t)| (format!("locomo turn {i}"), t))
            .collect();
        if docs.len() < 2000 {
            eprintln!("skipped: only {} turns on this machine", docs.len());
            return;
        }
        let fps = false_positives(&with_pii(), &docs);
        eprintln!("pii: {} false redactions in {} turns", fps.len(), docs.len());
        assert!(fps.len() * 2000 <= docs.len(), "{}", fps.join("\n"));
    }

    /// Lists what the scrubber would redact in a directory of your choice, to audit
    /// false positives beyond the fixed corpus:
    /// `SCRUB_AUDIT_DIR=/some/src cargo test --test scrub audit -- --ignored --nocapture`
    #[test]
    #[ignore = "audit tool; needs SCRUB_AUDIT_DIR"]
    fn audit_directory() {
        let Some(root) = std::env::var_os("SCRUB_AUDIT_DIR") else {
            eprintln!("set SCRUB_AUDIT_DIR");
            return;
        };
        let mut stack = vec![PathBuf::from(root)];
        let mut docs = Vec::new();
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(text) = std::fs::read_to_string(&p) {
                    docs.push((p.display().to_string(), text));
                }
            }
        }
        docs.sort();
        let lines: usize = docs.iter().map(|(_, t)| t.lines().count()).sum();
        let fps = false_positives(&scrubber(), &docs);
        eprintln!("{}", fps.join("\n"));
        eprintln!("{} findings in {lines} lines of {} files", fps.len(), docs.len());
    }

    // ---------------------------------------------------------------------------
    // Throughput (prints, never asserts on time)
    // ---------------------------------------------------------------------------

    /// `cargo test --test scrub throughput -- --ignored --nocapture`
    #[test]
    #[ignore = "prints throughput; run explicitly"]
    fn throughput() {
        let s = scrubber();
        let turns = crate::common::locomo_turns();
        if turns.is_empty() {
            eprintln!("skipped: no LoCoMo data");
            return;
        }
        let _ = s.scrub("warm up ghp_0123456789abcdefghijABCDEFGHIJ012345");
        let report = |name: &str, texts: &[String]| {
            let bytes: usize = texts.iter().map(String::len).sum();
            let rounds = (64 << 20) / bytes.max(1) + 1;
            let start = Instant::now();
            let mut changed = 0;
            for _ in 0..rounds {
                for t in texts {
                    if let Cow::Owned(_) = s.scrub(std::hint::black_box(t)) {
                        changed += 1;
                    }
                }
            }
            let secs = start.elapsed().as_secs_f64();
            let mb = (bytes * rounds) as f64 / 1e6;
            eprintln!("{name}: {:.0} MB/s ({mb:.0} MB in {secs:.2} s, {changed} texts changed)", mb / secs);
        };
        report("chat, one turn at a time", &turns);
        report("chat, one blob", &[turns.join("\n")]);
        let code: Vec<String> = python_files().into_iter().map(|(_, t)| t).collect();
        report("python source, per file", &code);
    }
}
