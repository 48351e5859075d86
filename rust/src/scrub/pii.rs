//! Opt-in personal data (`ScrubOptions::pii`): e-mail addresses, phone numbers,
//! payment cards, IBANs and US social security numbers.
//!
//! Numbers are everywhere in ordinary text, so every numeric rule has a checksum or a
//! structural test: cards must pass Luhn and start with an issuer prefix, IBANs must
//! pass ISO 7064 mod-97, phone numbers need the grouping people write them with.

use super::rule::{Rule, Verdict, PERSONAL};
use regex::Captures;

pub(crate) const RULES: &[Rule] = &[
    Rule::pii(
        "credit_card",
        PERSONAL + 4,
        r"\b(?P<s1>[0-9]{13,19}|[0-9]{4}(?:[ \-][0-9]{4}){3}(?:[ \-]?[0-9]{1,3})?|[0-9]{4}[ \-][0-9]{6}[ \-][0-9]{4,5})\b",
    )
    .check(card),
    Rule::pii(
        "iban",
        PERSONAL + 3,
        r"\b(?P<s1>[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?)\b",
    )
    .check(iban),
    Rule::pii("us_ssn", PERSONAL + 2, r"\b(?P<s1>[0-9]{3}-[0-9]{2}-[0-9]{4})\b").check(ssn),
    // International (+CC ...) or North American ((555) 123-4567, 555-123-4567).
    Rule::pii(
        "phone_number",
        PERSONAL + 1,
        r"(?P<s1>\+[0-9]{1,3}(?:[ .\-]?\(?[0-9]{1,4}\)?){2,6}|(?:\([0-9]{3}\)[ .\-]?|\b[0-9]{3}[ .\-])[0-9]{3}[ .\-][0-9]{4})\b",
    )
    .check(phone),
    Rule::pii(
        "email",
        PERSONAL,
        r"\b(?P<s1>[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?)*\.[A-Za-z]{2,24})\b",
    )
    .exact(&["@"]),
];

fn verdict(ok: bool) -> Verdict {
    if ok {
        Verdict::Accept
    } else {
        Verdict::Reject
    }
}

fn digits(s: &str) -> Vec<u8> {
    s.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect()
}

/// The Luhn checksum used by every payment card number.
pub(crate) fn luhn_valid(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 {
                    doubled - 9
                } else {
                    doubled
                }
            } else {
                d
            }
        })
        .sum();
    !digits.is_empty() && sum.is_multiple_of(10)
}

/// Issuer prefixes of the major networks; a Luhn-valid number outside them is more
/// likely an order or tracking number.
fn card_issuer(d: &[u8]) -> bool {
    let prefix = |n: usize| d.iter().take(n).fold(0u32, |acc, &x| acc * 10 + u32::from(x));
    let (p1, p2, p3, p4) = (prefix(1), prefix(2), prefix(3), prefix(4));
    p1 == 4 // Visa
        || (51..=55).contains(&p2) || (2221..=2720).contains(&p4) // Mastercard
        || p2 == 34 || p2 == 37 // Amex
        || p4 == 6011 || p2 == 65 || (644..=649).contains(&p3) // Discover
        || (3528..=3589).contains(&p4) // JCB
        || (300..=305).contains(&p3) || p2 == 36 || p2 == 38 // Diners
        || p2 == 62 // UnionPay
}

fn card(_: &Captures<'_>, s: &str) -> Verdict {
    let d = digits(s);
    verdict((13..=19).contains(&d.len()) && luhn_valid(&d) && card_issuer(&d))
}

/// ISO 13616: move the first four characters to the end, map letters to 10..35,
/// and the number is 1 modulo 97.
pub(crate) fn iban_valid(s: &str) -> bool {
    let compact: Vec<u8> = s.bytes().filter(|b| *b != b' ').collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut rem: u32 = 0;
    for &b in tail.iter().chain(head) {
        let v = match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'A'..=b'Z' => u32::from(b - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 { (rem * 100 + v) % 97 } else { (rem * 10 + v) % 97 };
    }
    rem == 1
}

fn iban(_: &Captures<'_>, s: &str) -> Verdict {
    verdict(iban_valid(s))
}

/// Area 000, 666 and 900-999, group 00 and serial 0000 are never issued.
fn ssn(_: &Captures<'_>, s: &str) -> Verdict {
    let d = digits(s);
    if d.len() != 9 {
        return Verdict::Reject;
    }
    let area = u32::from(d[0]) * 100 + u32::from(d[1]) * 10 + u32::from(d[2]);
    let ok = area != 0 && area != 666 && area < 900 && d[3..5] != [0, 0] && d[5..] != [0, 0, 0, 0];
    verdict(ok)
}

fn phone(_: &Captures<'_>, s: &str) -> Verdict {
    let n = s.bytes().filter(u8::is_ascii_digit).count();
    verdict((10..=15).contains(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_accepts_test_cards_and_rejects_a_changed_digit() {
        assert!(luhn_valid(&digits("4111 1111 1111 1111")));
        assert!(luhn_valid(&digits("378282246310005")));
        assert!(!luhn_valid(&digits("4111 1111 1111 1112")));
    }

    #[test]
    fn iban_mod97() {
        assert!(iban_valid("GB82 WEST 1234 5698 7654 32"));
        assert!(iban_valid("DE89370400440532013000"));
        assert!(!iban_valid("DE89370400440532013001"));
        assert!(!iban_valid("GB82"));
    }
}
