//! Metadata filters: which entries' metadata a read, a count or a deletion
//! selects, as a JSON object.
//!
//! ```json
//! {"user": "u-42", "profile.age": {"$gte": 18}, "tags": {"$in": ["a", "b"]},
//!  "$or": [{"team": "red"}, {"draft": {"$exists": false}}]}
//! ```
//!
//! - Keys are paths into the metadata: `profile.age` is the `age` of the
//!   object under `profile`. Conditions on several keys all hold (AND);
//!   `$and` and `$or` take a list of such objects.
//! - A plain value is `$eq`. Operators: `$eq $ne $gt $gte $lt $lte $in $nin
//!   $exists`; several in one object all hold. `$eq` and `$ne` also take a
//!   list of values: equal to a list of the same length, element by element.
//! - Typed: numbers compare as numbers (`1` equals `1.0`), strings as strings
//!   (byte order), `true`/`false`/`null` only equal themselves; a comparison
//!   between different types does not hold. `$ne` and `$nin` hold where the key
//!   is missing; the others need it (`$exists: false` selects its absence).
//! - Anything else (an unknown operator, a list or object where a value is
//!   expected, an empty path segment) is refused with a message.
//!
//! One filter is evaluated two ways that must agree: against an entry's
//! metadata in Rust (`Filter::matches`: the in-memory tail, and the final check
//! of every hit) and as SQL over the `metadata` column (`Filter::sql`: lists,
//! counts, deletions, and the ids a query may return).

use libsql::Value as SqlValue;
use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};

/// A parsed metadata filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Every one holds (an empty list: everything).
    All(Vec<Filter>),
    /// At least one holds (never empty).
    Any(Vec<Filter>),
    /// A condition on the value at a path.
    On { path: Vec<String>, op: Op },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Eq(Scalar),
    Ne(Scalar),
    Gt(Scalar),
    Gte(Scalar),
    Lt(Scalar),
    Lte(Scalar),
    In(Vec<Scalar>),
    Nin(Vec<Scalar>),
    Exists(bool),
}

/// A value a condition compares with.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Num(Number),
    Str(String),
    /// For `$eq`/`$ne` only: a list of the same length, equal element by element.
    List(Vec<Scalar>),
}

/// The deepest `$and`/`$or` nesting accepted.
const MAX_NESTING: usize = 16;

impl Filter {
    /// Parses a filter from its JSON text.
    pub fn parse(json: &str) -> Result<Filter> {
        let value: Value = serde_json::from_str(json)
            .map_err(|err| Error::invalid(format!("metadata filter is not JSON: {err}")))?;
        let Value::Object(map) = value else {
            return Err(Error::invalid("metadata filter must be an object"));
        };
        parse_object(&map, 0)
    }

    /// Whether nothing is filtered (`{}`).
    pub fn is_empty(&self) -> bool {
        matches!(self, Filter::All(parts) if parts.is_empty())
    }

    /// Whether entry metadata (its JSON text; `None`: no metadata) matches.
    pub fn matches_json(&self, metadata: Option<&str>) -> bool {
        let value = metadata.and_then(|m| serde_json::from_str::<Value>(m).ok()).unwrap_or(Value::Null);
        self.matches(&value)
    }

    /// Whether the metadata object `metadata` matches.
    pub fn matches(&self, metadata: &Value) -> bool {
        match self {
            Filter::All(parts) => parts.iter().all(|f| f.matches(metadata)),
            Filter::Any(parts) => parts.iter().any(|f| f.matches(metadata)),
            Filter::On { path, op } => {
                let found = lookup(metadata, path);
                match op {
                    Op::Eq(x) => found.is_some_and(|v| equal(v, x)),
                    Op::Ne(x) => !found.is_some_and(|v| equal(v, x)),
                    Op::Gt(x) => found.is_some_and(|v| compare(v, x).is_some_and(|o| o.is_gt())),
                    Op::Gte(x) => found.is_some_and(|v| compare(v, x).is_some_and(|o| o.is_ge())),
                    Op::Lt(x) => found.is_some_and(|v| compare(v, x).is_some_and(|o| o.is_lt())),
                    Op::Lte(x) => found.is_some_and(|v| compare(v, x).is_some_and(|o| o.is_le())),
                    Op::In(xs) => found.is_some_and(|v| xs.iter().any(|x| equal(v, x))),
                    Op::Nin(xs) => !found.is_some_and(|v| xs.iter().any(|x| equal(v, x))),
                    Op::Exists(want) => found.is_some() == *want,
                }
            }
        }
    }

    /// The filter as an SQL expression over the `metadata` column, its
    /// parameters appended to `params` (numbered from their position).
    pub fn sql(&self, params: &mut Vec<SqlValue>) -> String {
        match self {
            Filter::All(parts) if parts.is_empty() => "1".into(),
            Filter::All(parts) => join(parts, " AND ", params),
            Filter::Any(parts) => join(parts, " OR ", params),
            Filter::On { path, op } => {
                params.push(SqlValue::Text(json_path(path)));
                let p = params.len();
                let eq = |x: &Scalar, params: &mut Vec<SqlValue>| eq_sql(p, x, params);
                match op {
                    Op::Eq(x) => eq(x, params),
                    Op::Ne(x) => format!("NOT IFNULL({}, 0)", eq(x, params)),
                    Op::Gt(x) => order_sql(p, ">", x, params),
                    Op::Gte(x) => order_sql(p, ">=", x, params),
                    Op::Lt(x) => order_sql(p, "<", x, params),
                    Op::Lte(x) => order_sql(p, "<=", x, params),
                    Op::In(xs) if xs.is_empty() => "0".into(),
                    Op::In(xs) => {
                        let any: Vec<String> = xs.iter().map(|x| eq(x, params)).collect();
                        format!("({})", any.join(" OR "))
                    }
                    Op::Nin(xs) if xs.is_empty() => "1".into(),
                    Op::Nin(xs) => {
                        let any: Vec<String> = xs.iter().map(|x| eq(x, params)).collect();
                        format!("NOT IFNULL(({}), 0)", any.join(" OR "))
                    }
                    Op::Exists(true) => format!("json_type(metadata, ?{p}) IS NOT NULL"),
                    Op::Exists(false) => format!("json_type(metadata, ?{p}) IS NULL"),
                }
            }
        }
    }

    /// The `key=<json>` index terms an entry must hold for this filter to
    /// match it: the top-level equalities with a string, `true`, `false` or
    /// `null` (numbers compare as numbers, which terms cannot).
    pub fn index_terms(&self) -> Vec<String> {
        let conditions: &[Filter] = match self {
            Filter::All(parts) => parts,
            on @ Filter::On { .. } => std::slice::from_ref(on),
            Filter::Any(_) => return Vec::new(),
        };
        conditions
            .iter()
            .filter_map(|f| match f {
                Filter::On { path, op: Op::Eq(x) } if path.len() == 1 => {
                    let json = match x {
                        Scalar::Num(_) | Scalar::List(_) => return None,
                        Scalar::Null => Value::Null,
                        Scalar::Bool(b) => Value::Bool(*b),
                        Scalar::Str(s) => Value::String(s.clone()),
                    };
                    Some(crate::index::schema::metadata_term(&path[0], &json))
                }
                _ => None,
            })
            .collect()
    }

    /// Whether the index terms alone decide the filter (then no row needs
    /// reading to apply it).
    pub fn decided_by_terms(&self) -> bool {
        let conditions: &[Filter] = match self {
            Filter::All(parts) => parts,
            on @ Filter::On { .. } => std::slice::from_ref(on),
            Filter::Any(_) => return false,
        };
        conditions.iter().all(|f| {
            matches!(f, Filter::On { path, op: Op::Eq(x) }
                if path.len() == 1 && !matches!(x, Scalar::Num(_) | Scalar::List(_)))
        })
    }
}

fn join(parts: &[Filter], sep: &str, params: &mut Vec<SqlValue>) -> String {
    let sql: Vec<String> = parts.iter().map(|f| f.sql(params)).collect();
    format!("({})", sql.join(sep))
}

/// The SQL for "the value at path parameter `p` equals `x`"; NULL where the
/// path is missing (through `json_type`), hence the callers' IFNULL.
fn eq_sql(p: usize, x: &Scalar, params: &mut Vec<SqlValue>) -> String {
    match x {
        Scalar::List(items) => {
            let SqlValue::Text(path) = params[p - 1].clone() else { unreachable!("a path is text") };
            let mut all = vec![
                format!("json_type(metadata, ?{p}) = 'array'"),
                format!("json_array_length(metadata, ?{p}) = {}", items.len()),
            ];
            for (i, item) in items.iter().enumerate() {
                // The element's path: the list's, then `[i]`.
                params.push(SqlValue::Text(format!("{path}[{i}]")));
                let element = params.len();
                all.push(eq_sql(element, item, params));
            }
            format!("({})", all.join(" AND "))
        }
        Scalar::Null => format!("json_type(metadata, ?{p}) = 'null'"),
        Scalar::Bool(true) => format!("json_type(metadata, ?{p}) = 'true'"),
        Scalar::Bool(false) => format!("json_type(metadata, ?{p}) = 'false'"),
        Scalar::Num(n) => {
            params.push(number(n));
            format!(
                "(json_type(metadata, ?{p}) IN ('integer', 'real') AND json_extract(metadata, ?{p}) = ?{})",
                params.len()
            )
        }
        Scalar::Str(s) => {
            params.push(SqlValue::Text(s.clone()));
            format!(
                "(json_type(metadata, ?{p}) = 'text' AND json_extract(metadata, ?{p}) = ?{})",
                params.len()
            )
        }
    }
}

fn order_sql(p: usize, cmp: &str, x: &Scalar, params: &mut Vec<SqlValue>) -> String {
    let (types, value) = match x {
        Scalar::Num(n) => ("IN ('integer', 'real')", number(n)),
        Scalar::Str(s) => ("= 'text'", SqlValue::Text(s.clone())),
        // Refused when parsed.
        Scalar::Null | Scalar::Bool(_) | Scalar::List(_) => return "0".into(),
    };
    params.push(value);
    format!("(json_type(metadata, ?{p}) {types} AND json_extract(metadata, ?{p}) {cmp} ?{})", params.len())
}

fn number(n: &Number) -> SqlValue {
    match n.as_i64() {
        Some(i) => SqlValue::Integer(i),
        None => SqlValue::Real(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// SQLite's JSON path for `path`, every key quoted (parsing refused keys that
/// hold a double quote).
fn json_path(path: &[String]) -> String {
    let mut out = String::from("$");
    for key in path {
        out.push_str(".\"");
        out.push_str(key);
        out.push('"');
    }
    out
}

fn lookup<'v>(mut value: &'v Value, path: &[String]) -> Option<&'v Value> {
    for key in path {
        value = value.as_object()?.get(key)?;
    }
    Some(value)
}

fn equal(v: &Value, x: &Scalar) -> bool {
    match (v, x) {
        (Value::Null, Scalar::Null) => true,
        (Value::Bool(a), Scalar::Bool(b)) => a == b,
        (Value::String(a), Scalar::Str(b)) => a == b,
        (Value::Number(a), Scalar::Num(b)) => number_cmp(a, b) == Some(std::cmp::Ordering::Equal),
        (Value::Array(a), Scalar::List(b)) => a.len() == b.len() && a.iter().zip(b).all(|(v, x)| equal(v, x)),
        _ => false,
    }
}

fn compare(v: &Value, x: &Scalar) -> Option<std::cmp::Ordering> {
    match (v, x) {
        (Value::String(a), Scalar::Str(b)) => Some(a.as_str().cmp(b.as_str())),
        (Value::Number(a), Scalar::Num(b)) => number_cmp(a, b),
        _ => None,
    }
}

/// Integers exactly, otherwise as floats (as SQLite compares them).
fn number_cmp(a: &Number, b: &Number) -> Option<std::cmp::Ordering> {
    match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn parse_object(map: &Map<String, Value>, depth: usize) -> Result<Filter> {
    if depth > MAX_NESTING {
        return Err(Error::invalid(format!("metadata filter nests $and/$or deeper than {MAX_NESTING}")));
    }
    let mut parts = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            "$and" | "$or" => {
                let Value::Array(items) = value else {
                    return Err(Error::invalid(format!("metadata filter {key} takes a list of objects")));
                };
                if items.is_empty() {
                    return Err(Error::invalid(format!("metadata filter {key} takes a non-empty list")));
                }
                let subs = items
                    .iter()
                    .map(|item| match item {
                        Value::Object(m) => parse_object(m, depth + 1),
                        _ => Err(Error::invalid(format!("metadata filter {key} takes a list of objects"))),
                    })
                    .collect::<Result<Vec<_>>>()?;
                parts.push(if key == "$and" { Filter::All(subs) } else { Filter::Any(subs) });
            }
            k if k.starts_with('$') => {
                return Err(Error::invalid(format!(
                    "metadata filter: unknown operator {k:?} at the top level (use $and or $or, \
                     or a key with a condition)"
                )));
            }
            _ => {
                let path = parse_path(key)?;
                parts.extend(parse_condition(key, &path, value)?);
            }
        }
    }
    Ok(if parts.len() == 1 { parts.remove(0) } else { Filter::All(parts) })
}

fn parse_path(key: &str) -> Result<Vec<String>> {
    let path: Vec<String> = key.split('.').map(str::to_owned).collect();
    if path.iter().any(|p| p.is_empty() || p.contains('"') || p.chars().any(char::is_control)) {
        return Err(Error::invalid(format!(
            "metadata filter key {key:?}: a path of dot-separated keys, none empty, without '\"' \
             or control characters"
        )));
    }
    Ok(path)
}

fn parse_condition(key: &str, path: &[String], value: &Value) -> Result<Vec<Filter>> {
    let on = |op| Filter::On { path: path.to_vec(), op };
    match value {
        Value::Object(ops) => {
            if ops.is_empty() || ops.keys().any(|k| !k.starts_with('$')) {
                return Err(Error::invalid(format!(
                    "metadata filter {key:?}: an object here holds operators ($eq, $ne, $gt, $gte, \
                     $lt, $lte, $in, $nin, $exists); use a dotted key for a nested value"
                )));
            }
            ops.iter().map(|(op, arg)| parse_op(key, op, arg).map(on)).collect()
        }
        value => Ok(vec![on(Op::Eq(to_value(key, "$eq", value)?))]),
    }
}

fn parse_op(key: &str, op: &str, arg: &Value) -> Result<Op> {
    let ordered = |arg: &Value| match arg {
        Value::Number(n) => Ok(Scalar::Num(n.clone())),
        Value::String(s) => Ok(Scalar::Str(s.clone())),
        _ => Err(Error::invalid(format!("metadata filter {key:?}: {op} compares a number or a string"))),
    };
    let list = |arg: &Value| match arg {
        Value::Array(items) => items.iter().map(|v| to_scalar(key, op, v)).collect::<Result<Vec<_>>>(),
        _ => Err(Error::invalid(format!("metadata filter {key:?}: {op} takes a list"))),
    };
    Ok(match op {
        "$eq" => Op::Eq(to_value(key, op, arg)?),
        "$ne" => Op::Ne(to_value(key, op, arg)?),
        "$gt" => Op::Gt(ordered(arg)?),
        "$gte" => Op::Gte(ordered(arg)?),
        "$lt" => Op::Lt(ordered(arg)?),
        "$lte" => Op::Lte(ordered(arg)?),
        "$in" => Op::In(list(arg)?),
        "$nin" => Op::Nin(list(arg)?),
        "$exists" => match arg {
            Value::Bool(b) => Op::Exists(*b),
            _ => return Err(Error::invalid(format!("metadata filter {key:?}: $exists takes true or false"))),
        },
        other => {
            return Err(Error::invalid(format!(
                "metadata filter {key:?}: unknown operator {other:?} (known: $eq, $ne, $gt, $gte, $lt, \
                 $lte, $in, $nin, $exists)"
            )))
        }
    })
}

/// A scalar, or a list of scalars (what `$eq` and `$ne` compare with).
fn to_value(key: &str, op: &str, value: &Value) -> Result<Scalar> {
    match value {
        Value::Array(items) => {
            Ok(Scalar::List(items.iter().map(|v| to_scalar(key, op, v)).collect::<Result<Vec<_>>>()?))
        }
        other => to_scalar(key, op, other),
    }
}

fn to_scalar(key: &str, op: &str, value: &Value) -> Result<Scalar> {
    Ok(match value {
        Value::Null => Scalar::Null,
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Number(n) => Scalar::Num(n.clone()),
        Value::String(s) => Scalar::Str(s.clone()),
        _ => {
            return Err(Error::invalid(format!(
                "metadata filter {key:?}: {op} takes a string, number, true, false or null"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(v: Value) -> Filter {
        Filter::parse(&v.to_string()).unwrap()
    }

    #[test]
    fn typed_comparisons() {
        let m = json!({"n": 3, "x": 2.5, "s": "b", "t": true, "z": null, "p": {"q": 7}});
        assert!(f(json!({"n": 3.0})).matches(&m));
        assert!(f(json!({"n": {"$gt": 2, "$lte": 3}})).matches(&m));
        assert!(!f(json!({"n": "3"})).matches(&m));
        assert!(f(json!({"s": {"$gt": "a"}})).matches(&m));
        assert!(!f(json!({"s": {"$gt": 1}})).matches(&m));
        assert!(f(json!({"t": true, "z": null})).matches(&m));
        assert!(!f(json!({"t": 1})).matches(&m));
        assert!(f(json!({"p.q": {"$in": [1, 7]}})).matches(&m));
        assert!(f(json!({"missing": {"$ne": 1}, "gone": {"$nin": [1]}})).matches(&m));
        assert!(f(json!({"missing": {"$exists": false}, "z": {"$exists": true}})).matches(&m));
        assert!(f(json!({"$or": [{"n": 1}, {"x": {"$lt": 3}}]})).matches(&m));
        assert!(!f(json!({"$or": [{"n": 1}, {"x": {"$lt": 2}}]})).matches(&m));
        assert!(!f(json!({"n": {"$gt": 1}})).matches(&Value::Null));
        let tags = json!({"tags": ["draft", 2]});
        assert!(f(json!({"tags": ["draft", 2.0]})).matches(&tags));
        assert!(!f(json!({"tags": ["draft"]})).matches(&tags));
        assert!(f(json!({"tags": {"$ne": ["draft"]}})).matches(&tags));
    }

    #[test]
    fn bad_filters_are_refused_with_a_reason() {
        for bad in [
            json!({"n": {"$regex": "x"}}),
            json!({"$nor": []}),
            json!({"n": [1, [2]]}),
            json!({"n": {"a": 1}}),
            json!({"n": {"$gt": true}}),
            json!({"n": {"$in": 3}}),
            json!({"n": {"$exists": 1}}),
            json!({"a..b": 1}),
            json!({"$or": []}),
            json!([1]),
        ] {
            let err = Filter::parse(&bad.to_string()).unwrap_err();
            assert!(err.to_string().contains("metadata filter"), "{bad}: {err}");
        }
    }

    #[test]
    fn index_terms_only_for_exact_top_level_equalities() {
        assert_eq!(f(json!({"u": "a", "n": 1, "p.q": "x"})).index_terms(), vec![r#"u="a""#.to_owned()]);
        assert!(f(json!({"u": "a", "t": true})).decided_by_terms());
        assert!(!f(json!({"u": "a", "n": 1})).decided_by_terms());
        assert!(f(json!({"$or": [{"u": "a"}]})).index_terms().is_empty());
    }
}
