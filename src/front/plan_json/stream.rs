//! Reading the document's top level as it is parsed (see [`super::read_plan`]).

use super::json::{Json, KeySeed};
use super::{gpu_rank, At, PlanError, RankPlan, Step};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The top-level fields but `gpus` (`Null` if the document is not an
/// object), and the ranks read from `gpus`.
pub struct Document<'de> {
    pub top: Json<'de>,
    pub gpus: Gpus,
}

pub enum Gpus {
    Missing,
    NotList,
    Ranks(Vec<RankPlan>),
    /// The first rank's problem (the rest were parsed, not read).
    Failed(PlanError),
}

pub struct Top;

impl<'de> Visitor<'de> for Top {
    type Value = Document<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a plan")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document<'de>, A::Error> {
        let mut top = Vec::new();
        let mut gpus = Gpus::Missing;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if key == "gpus" {
                gpus = map.next_value_seed(GpusSeed)?;
            } else {
                let value: Json = map.next_value()?;
                top.push((key, value));
            }
        }
        Ok(Document {
            top: Json::Object(top),
            gpus,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Document<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(not_an_object())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Document<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Document<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Document<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Document<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_str<E>(self, _: &str) -> Result<Document<'de>, E> {
        Ok(not_an_object())
    }

    fn visit_unit<E>(self) -> Result<Document<'de>, E> {
        Ok(not_an_object())
    }
}

fn not_an_object<'de>() -> Document<'de> {
    Document {
        top: Json::Null,
        gpus: Gpus::Missing,
    }
}

struct GpusSeed;

impl<'de> DeserializeSeed<'de> for GpusSeed {
    type Value = Gpus;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Gpus, D::Error> {
        d.deserialize_any(GpusVisitor)
    }
}

struct GpusVisitor;

impl<'de> Visitor<'de> for GpusVisitor {
    type Value = Gpus;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of ranks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Gpus, A::Error> {
        let mut ranks = Vec::new();
        loop {
            // One rank's value at a time; after a problem, only parse.
            let i = ranks.len();
            let Some(value) = seq.next_element::<Json>()? else {
                return Ok(Gpus::Ranks(ranks));
            };
            let gpus = At::top_level("gpus");
            match gpu_rank(&gpus.child(&value, Step::Index(i)), i) {
                Ok(rank) => ranks.push(rank),
                Err(e) => {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    return Ok(Gpus::Failed(e));
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Gpus, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Gpus::NotList)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Gpus, E> {
        Ok(Gpus::NotList)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Gpus, E> {
        Ok(Gpus::NotList)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Gpus, E> {
        Ok(Gpus::NotList)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Gpus, E> {
        Ok(Gpus::NotList)
    }

    fn visit_str<E>(self, _: &str) -> Result<Gpus, E> {
        Ok(Gpus::NotList)
    }

    fn visit_unit<E>(self) -> Result<Gpus, E> {
        Ok(Gpus::NotList)
    }
}
