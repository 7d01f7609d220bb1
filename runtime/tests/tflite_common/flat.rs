//! A minimal FlatBuffers writer, enough for a TFLite model: tables of
//! scalars, vectors, strings and sub-tables, written front to back (a
//! parent before its children, so every offset points forward).
pub enum Field {
    U8(u8),
    I32(i32),
    U32(u32),
    Bool(bool),
    Table(Table),
    Tables(Vec<Table>),
    I32s(Vec<i32>),
    F32s(Vec<f32>),
    I64s(Vec<i64>),
    Bytes(Vec<u8>),
    Str(String),
}

/// Fields by their index in the schema's table.
pub struct Table(pub Vec<(u16, Field)>);

fn align(buf: &mut Vec<u8>, to: usize, offset: usize) {
    while !(buf.len() + offset).is_multiple_of(to) {
        buf.push(0);
    }
}

fn patch(buf: &mut [u8], at: usize, target: usize) {
    let offset = (target - at) as u32;
    buf[at..at + 4].copy_from_slice(&offset.to_le_bytes());
}

fn vector(buf: &mut Vec<u8>, len: usize, elem_align: usize, bytes: &[u8]) -> usize {
    align(buf, elem_align.max(4), 4);
    let at = buf.len();
    buf.extend((len as u32).to_le_bytes());
    buf.extend(bytes);
    at
}

fn child(buf: &mut Vec<u8>, field: &Field) -> usize {
    match field {
        Field::Table(t) => table(buf, t),
        Field::Tables(ts) => {
            let at = vector(buf, ts.len(), 4, &vec![0; 4 * ts.len()]);
            for (i, t) in ts.iter().enumerate() {
                let target = table(buf, t);
                patch(buf, at + 4 + 4 * i, target);
            }
            at
        }
        Field::I32s(v) => {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            vector(buf, v.len(), 4, &bytes)
        }
        Field::F32s(v) => {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            vector(buf, v.len(), 4, &bytes)
        }
        Field::I64s(v) => {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            vector(buf, v.len(), 8, &bytes)
        }
        Field::Bytes(v) => vector(buf, v.len(), 1, v),
        Field::Str(s) => {
            let mut bytes = s.as_bytes().to_vec();
            bytes.push(0);
            vector(buf, s.len(), 4, &bytes)
        }
        _ => unreachable!("scalars are inline"),
    }
}

/// Writes `t` (its vtable first, then the table, then its children);
/// returns the table's position.
pub fn table(buf: &mut Vec<u8>, t: &Table) -> usize {
    // The table's layout: soffset, then each field aligned to 4 (8 is
    // never needed inline here).
    let mut layout = Vec::new();
    let mut size = 4usize;
    for (index, field) in &t.0 {
        let width = match field {
            Field::U8(_) | Field::Bool(_) => 1,
            _ => 4,
        };
        size = size.next_multiple_of(width);
        layout.push((*index, size, width));
        size += width;
    }
    let size = size.next_multiple_of(4);
    let slots = t.0.iter().map(|(i, _)| *i as usize + 1).max().unwrap_or(0);
    align(buf, 2, 0);
    // vtable + padding so the table starts 4-aligned.
    let vtable_len = 4 + 2 * slots;
    let mut vtable = vec![0u16; 2 + slots];
    vtable[0] = vtable_len as u16;
    vtable[1] = size as u16;
    for &(index, at, _) in &layout {
        vtable[2 + index as usize] = at as u16;
    }
    let vt_at = buf.len();
    for v in vtable {
        buf.extend(v.to_le_bytes());
    }
    align(buf, 4, 0);
    let at = buf.len();
    buf.extend(((at - vt_at) as i32).to_le_bytes());
    buf.resize(at + size, 0);
    let mut children = Vec::new();
    for ((_, field), &(_, offset, _)) in t.0.iter().zip(&layout) {
        let p = at + offset;
        match field {
            Field::U8(v) => buf[p] = *v,
            Field::Bool(v) => buf[p] = *v as u8,
            Field::I32(v) => buf[p..p + 4].copy_from_slice(&v.to_le_bytes()),
            Field::U32(v) => buf[p..p + 4].copy_from_slice(&v.to_le_bytes()),
            other => children.push((p, other)),
        }
    }
    for (p, field) in children {
        let target = child(buf, field);
        patch(buf, p, target);
    }
    at
}

/// A TFLite file: the root offset, `TFL3`, then the model table.
pub fn file(model: &Table) -> Vec<u8> {
    let mut buf = vec![0, 0, 0, 0];
    buf.extend(b"TFL3");
    let root = table(&mut buf, model);
    patch(&mut buf, 0, root);
    buf
}

/// A one-op model: a uint8 2x2 stride-2 VALID MAX_POOL_2D with a fused
/// RELU6, `[1, 4, 4, 3]` to `[1, 2, 2, 3]`, scale 0.05 and zero point 128
/// on both sides. Every kernel set of TFLite runs it; qneon's XNNPACK path
/// refuses it (XNNPACK's uint8 activation bounds are not built), so tests
/// use it as the example of that refusal.
pub fn uint8_relu6_max_pool() -> Vec<u8> {
    use Field as F;
    const UINT8: u8 = 3;
    const MAX_POOL_2D: u8 = 17;
    const POOL_2D_OPTIONS: u8 = 5;
    const RELU6: u8 = 3;
    const VALID: u8 = 1;
    let tensor = |name: &str, shape: Vec<i32>| {
        Table(vec![
            (0, F::I32s(shape)),
            (1, F::U8(UINT8)),
            (2, F::U32(0)),
            (3, F::Str(name.to_string())),
            (
                4,
                F::Table(Table(vec![
                    (2, F::F32s(vec![0.05])),
                    (3, F::I64s(vec![128])),
                ])),
            ),
        ])
    };
    let options = Table(vec![
        (0, F::U8(VALID)),
        (1, F::I32(2)),
        (2, F::I32(2)),
        (3, F::I32(2)),
        (4, F::I32(2)),
        (5, F::U8(RELU6)),
    ]);
    let operator = Table(vec![
        (0, F::U32(0)),
        (1, F::I32s(vec![0])),
        (2, F::I32s(vec![1])),
        (3, F::U8(POOL_2D_OPTIONS)),
        (4, F::Table(options)),
    ]);
    let subgraph = Table(vec![
        (
            0,
            F::Tables(vec![
                tensor("x", vec![1, 4, 4, 3]),
                tensor("y", vec![1, 2, 2, 3]),
            ]),
        ),
        (1, F::I32s(vec![0])),
        (2, F::I32s(vec![1])),
        (3, F::Tables(vec![operator])),
        (4, F::Str("main".to_string())),
    ]);
    file(&Table(vec![
        (0, F::U32(3)),
        (
            1,
            F::Tables(vec![Table(vec![
                (0, F::U8(MAX_POOL_2D)),
                (2, F::I32(1)),
                (3, F::I32(MAX_POOL_2D as i32)),
            ])]),
        ),
        (2, F::Tables(vec![subgraph])),
        (4, F::Tables(vec![Table(vec![])])),
    ]))
}
