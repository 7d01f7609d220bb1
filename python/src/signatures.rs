//! The model's signature defs (`get_signature_list`), read from the file's
//! tables: the runtime does not need them to run the main subgraph.

use planus::ReadAsRoot;
use qneon_tflite::schema::{ModelRef, TensorMapRef};

/// One signature: its key, the subgraph it runs, and its inputs and
/// outputs as `(name, tensor index)` in the file's order.
#[derive(Clone, Debug)]
pub struct Signature {
    pub key: String,
    pub subgraph: usize,
    pub inputs: Vec<(String, usize)>,
    pub outputs: Vec<(String, usize)>,
}

/// Every signature of `bytes` (a file the reader has verified); a
/// signature whose tables do not read is left out, with the reason in
/// the error list (never a panic).
pub fn read_signatures(bytes: &[u8]) -> Result<Vec<Signature>, String> {
    let model = ModelRef::read_as_root(bytes).map_err(|e| e.to_string())?;
    let Some(defs) = model.signature_defs().map_err(|e| e.to_string())? else {
        return Ok(Vec::new());
    };
    let mut signatures = Vec::new();
    for def in defs.iter() {
        let def = def.map_err(|e| e.to_string())?;
        let key = def
            .signature_key()
            .map_err(|e| e.to_string())?
            .unwrap_or_default()
            .to_string();
        let subgraph = def.subgraph_index().map_err(|e| e.to_string())? as usize;
        let inputs = tensor_maps(def.inputs().map_err(|e| e.to_string())?)?;
        let outputs = tensor_maps(def.outputs().map_err(|e| e.to_string())?)?;
        signatures.push(Signature {
            key,
            subgraph,
            inputs,
            outputs,
        });
    }
    Ok(signatures)
}

fn tensor_maps(
    maps: Option<planus::Vector<'_, planus::Result<TensorMapRef<'_>>>>,
) -> Result<Vec<(String, usize)>, String> {
    let mut out = Vec::new();
    for map in maps.into_iter().flat_map(|v| v.iter()) {
        let map = map.map_err(|e| e.to_string())?;
        let name = map.name().map_err(|e| e.to_string())?.unwrap_or_default();
        let tensor = map.tensor_index().map_err(|e| e.to_string())? as usize;
        out.push((name.to_string(), tensor));
    }
    Ok(out)
}
