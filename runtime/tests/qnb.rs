//! The `.qnb` model file: round trips of every dtype and quantization kind, zero-copy
//! access, and validation: every truncation and every single-bit flip of a small file
//! is rejected (never a panic), and each structural check catches its bad field even
//! when the checksum is recomputed, naming the byte offset of that field.
//!
//! The field offsets and the checksum below are written from the documented layout
//! (module docs of `qneon_runtime::qnb` and `models/README.md`), not taken from the
//! library, so a change to the format that the docs don't follow fails here.

use qneon_runtime::qnb::{AlignedBytes, DType, Element, Qnb, QnbWriter, Quant, ALIGN};
use qneon_runtime::Error;

// ---------------------------------------------------------------------------
// The documented layout, restated.
// ---------------------------------------------------------------------------

const HEADER: usize = 64;
const META_ENTRY: usize = 72;
const TENSOR_ENTRY: usize = 160;
// Tensor entry fields.
const T_DTYPE: usize = 64;
const T_RANK: usize = 68;
const T_DIMS: usize = 72;
const T_QKIND: usize = 120;
const T_ZP: usize = 124;
const T_SCALE: usize = 128;
const T_RESERVED: usize = 132;
const T_SCALES_OFF: usize = 136;
const T_DATA_OFF: usize = 144;
const T_DATA_LEN: usize = 152;

/// FNV-1a 64, written from its definition (checked against published vectors below).
fn fnv1a64(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The file checksum: FNV-1a 64 with bytes 32..40 read as zero.
fn file_checksum(b: &[u8]) -> u64 {
    fnv1a64(
        b.iter()
            .enumerate()
            .map(|(i, &x)| if (32..40).contains(&i) { 0 } else { x }),
    )
}

fn fix_checksum(b: &mut [u8]) {
    let sum = file_checksum(b);
    b[32..40].copy_from_slice(&sum.to_le_bytes());
}

fn rd_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn rd_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn wr_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn wr_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn add_u64(b: &mut [u8], at: usize, delta: u64) {
    let v = rd_u64(b, at);
    wr_u64(b, at, v.wrapping_add(delta));
}
fn copy_u64(b: &mut [u8], from: usize, to: usize) {
    let v = rd_u64(b, from);
    wr_u64(b, to, v);
}

// ---------------------------------------------------------------------------
// A small file with every dtype and quantization kind.
// ---------------------------------------------------------------------------

const N_META: usize = 2;
/// Tensor indices in `small()`.
const W: usize = 0; // i8 [2, 3], per-channel
const U: usize = 1; // u8 [3], per-tensor
const H: usize = 2; // i16 [2], per-tensor
const B: usize = 3; // i32 [2], per-channel
const F: usize = 4; // f32 [] (rank 0), none

fn small_writer() -> QnbWriter {
    let mut w = QnbWriter::new();
    w.meta("seq_len", 4).unwrap();
    w.meta("hidden", -3).unwrap();
    w.tensor::<i8>(
        "w",
        &[2, 3],
        Quant::PerChannel {
            scales: vec![0.5, 0.25],
        },
        &[1, -2, 3, -4, 5, -128],
    )
    .unwrap();
    w.tensor::<u8>(
        "u",
        &[3],
        Quant::PerTensor {
            scale: 0.1,
            zero_point: 128,
        },
        &[0, 1, 255],
    )
    .unwrap();
    w.tensor::<i16>(
        "h",
        &[2],
        Quant::PerTensor {
            scale: 1.0 / 32768.0,
            zero_point: 0,
        },
        &[i16::MIN, i16::MAX],
    )
    .unwrap();
    w.tensor::<i32>(
        "b",
        &[2],
        Quant::PerChannel {
            scales: vec![0.125, 3.0],
        },
        &[i32::MIN, 7],
    )
    .unwrap();
    w.tensor::<f32>("f", &[], Quant::None, &[1.5]).unwrap();
    w
}

fn small() -> Vec<u8> {
    small_writer().to_bytes()
}

/// Byte offset of tensor entry `i` in `small()`.
fn entry(i: usize) -> usize {
    HEADER + META_ENTRY * N_META + TENSOR_ENTRY * i
}

fn parse_copy(b: &[u8]) -> Result<(), Error> {
    let a = AlignedBytes::copy_from(b);
    Qnb::parse(&a).map(|_| ())
}

/// Applies `f` to a copy of `small()`, recomputes the checksum, and returns the
/// parse error (failing if the file is accepted).
fn corrupt(f: impl FnOnce(&mut Vec<u8>)) -> Error {
    let mut b = small();
    f(&mut b);
    fix_checksum(&mut b);
    match parse_copy(&b) {
        Err(e) => e,
        Ok(()) => panic!("corrupted file was accepted"),
    }
}

/// Asserts `e` is a `ModelFile` error at `offset` whose problem mentions `word`.
#[track_caller]
fn assert_file_err(e: Error, offset: usize, word: &str) {
    match e {
        Error::ModelFile { problem, offset: o } => {
            assert_eq!(o, offset as u64, "offset for {problem:?}");
            assert!(
                problem.contains(word),
                "problem {problem:?} should mention {word:?}"
            );
            // The message names the problem and the offset.
            let msg = e.to_string();
            assert!(
                msg.contains(problem) && msg.contains(&offset.to_string()),
                "{msg}"
            );
        }
        other => panic!("expected ModelFile, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Checksum and layout.
// ---------------------------------------------------------------------------

#[test]
fn fnv1a64_matches_published_vectors() {
    assert_eq!(fnv1a64(*b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(*b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(*b"foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn writer_output_follows_documented_layout() {
    let b = small();
    assert_eq!(&b[0..8], b"QNEONQNB");
    assert_eq!(rd_u32(&b, 8), 1);
    assert_eq!(rd_u32(&b, 12), 64);
    assert_eq!(rd_u64(&b, 16), b.len() as u64);
    assert_eq!(rd_u32(&b, 24), N_META as u32);
    assert_eq!(rd_u32(&b, 28), 5);
    assert_eq!(rd_u64(&b, 32), file_checksum(&b));
    assert!(b[40..64].iter().all(|&x| x == 0));
    // Metadata entry 1: "hidden" = -3.
    let m1 = HEADER + META_ENTRY;
    assert_eq!(&b[m1..m1 + 7], b"hidden\0");
    assert_eq!(
        i64::from_le_bytes(b[m1 + 64..m1 + 72].try_into().unwrap()),
        -3
    );
    // Tensor "u": u8 [3], per-tensor 0.1 / 128.
    let u = entry(U);
    assert_eq!(&b[u..u + 2], b"u\0");
    assert!(b[u + 1..u + 64].iter().all(|&x| x == 0));
    assert_eq!(rd_u32(&b, u + T_DTYPE), 1);
    assert_eq!(rd_u32(&b, u + T_RANK), 1);
    assert_eq!(rd_u64(&b, u + T_DIMS), 3);
    assert!((1..6).all(|d| rd_u64(&b, u + T_DIMS + 8 * d) == 0));
    assert_eq!(rd_u32(&b, u + T_QKIND), 1);
    assert_eq!(rd_u32(&b, u + T_ZP), 128);
    assert_eq!(rd_u32(&b, u + T_SCALE), 0.1f32.to_bits());
    assert_eq!(rd_u64(&b, u + T_SCALES_OFF), 0);
    let off = rd_u64(&b, u + T_DATA_OFF) as usize;
    assert_eq!(off % 64, 0);
    assert_eq!(rd_u64(&b, u + T_DATA_LEN), 3);
    assert_eq!(&b[off..off + 3], &[0, 1, 255]);
    // Tensor "b": i32 per-channel, scales region of 2 f32.
    let e = entry(B);
    assert_eq!(rd_u32(&b, e + T_DTYPE), 3);
    assert_eq!(rd_u32(&b, e + T_QKIND), 2);
    let so = rd_u64(&b, e + T_SCALES_OFF) as usize;
    assert_eq!(so % 64, 0);
    assert_eq!(rd_u32(&b, so), 0.125f32.to_bits());
    assert_eq!(rd_u32(&b, so + 4), 3.0f32.to_bits());
    let off = rd_u64(&b, e + T_DATA_OFF) as usize;
    assert_eq!(rd_u32(&b, off), i32::MIN as u32);
    // "f": f32 rank 0, 4 bytes.
    let f = entry(F);
    assert_eq!(rd_u32(&b, f + T_DTYPE), 4);
    assert_eq!(rd_u32(&b, f + T_RANK), 0);
    assert_eq!(rd_u64(&b, f + T_DATA_LEN), 4);
}

// ---------------------------------------------------------------------------
// Round trips and zero-copy.
// ---------------------------------------------------------------------------

fn check_tensor<T: Element + PartialEq + std::fmt::Debug>(
    q: &Qnb<'_>,
    name: &'static str,
    shape: &[usize],
    quant: &Quant,
    data: &[T],
    buf: &[u8],
) {
    let t = q.tensor::<T>(name, shape).unwrap();
    assert_eq!(t.data, data, "{name}");
    assert_eq!(&t.quant, quant, "{name}");
    assert_eq!(q.info(name), Some((T::DTYPE, shape)));
    // Zero-copy: the slice lies inside the file buffer, at an aligned address.
    let start = t.data.as_ptr() as usize;
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    assert!(range.contains(&start) || (data.is_empty() && start <= range.end));
    assert!(start + std::mem::size_of_val(t.data) <= range.end);
    assert_eq!(start % ALIGN, 0, "{name}");
}

#[test]
fn round_trip_every_dtype_and_quant_kind() {
    let pc = |n: usize| Quant::PerChannel {
        scales: (0..n).map(|i| 0.01 * (i + 1) as f32).collect(),
    };
    let pt = |scale: f32, zero_point: i32| Quant::PerTensor { scale, zero_point };
    let i8s: Vec<i8> = (-128..=127).collect();
    let u8s: Vec<u8> = (0..=255).collect();
    let i16s: Vec<i16> = (0..64).map(|i| (i * 1031 - 32768) as i16).collect();
    let i32s: Vec<i32> = vec![i32::MIN, -1, 0, 1, i32::MAX, 12345];
    let f32s: Vec<f32> = vec![-0.0, 1.5, f32::MIN_POSITIVE, f32::MAX, f32::INFINITY, -7.25];

    let mut w = QnbWriter::new();
    w.meta("min", i64::MIN).unwrap();
    w.meta("max", i64::MAX).unwrap();
    w.meta("seq_len", 128).unwrap();
    let i8_cases = [
        ("i8 none", Quant::None),
        ("i8 per-tensor", pt(0.05, -128)),
        ("i8 per-channel", pc(16)),
    ];
    let u8_cases = [
        ("u8 none", Quant::None),
        ("u8 per-tensor", pt(1.0 / 256.0, 255)),
        ("u8 per-channel", pc(16)),
    ];
    let i16_cases = [
        ("i16 none", Quant::None),
        ("i16 per-tensor", pt(3e-5, -32768)),
        ("i16 per-channel", pc(8)),
    ];
    let i32_cases = [
        ("i32 none", Quant::None),
        ("i32 per-tensor", pt(1e-7, i32::MIN)),
        ("i32 per-channel", pc(3)),
    ];
    for (name, q) in &i8_cases {
        w.tensor(name, &[16, 16], q.clone(), &i8s).unwrap();
    }
    for (name, q) in &u8_cases {
        w.tensor(name, &[16, 4, 4], q.clone(), &u8s).unwrap();
    }
    for (name, q) in &i16_cases {
        w.tensor(name, &[8, 8], q.clone(), &i16s).unwrap();
    }
    for (name, q) in &i32_cases {
        w.tensor(name, &[3, 2], q.clone(), &i32s).unwrap();
    }
    w.tensor("f32", &[1, 2, 1, 3, 1, 1], Quant::None, &f32s)
        .unwrap();
    w.tensor::<f32>("scalar", &[], Quant::None, &[2.5]).unwrap();
    w.tensor::<i8>("empty", &[0, 5], Quant::None, &[]).unwrap();
    let bytes = w.to_bytes();
    let buf = AlignedBytes::copy_from(&bytes);
    let q = Qnb::parse(&buf).unwrap();

    assert_eq!(q.meta("min").unwrap(), i64::MIN);
    assert_eq!(q.meta("max").unwrap(), i64::MAX);
    assert_eq!(q.meta("seq_len").unwrap(), 128);
    assert_eq!(
        q.metas().collect::<Vec<_>>(),
        vec![("min", i64::MIN), ("max", i64::MAX), ("seq_len", 128)]
    );
    for (name, quant) in &i8_cases {
        check_tensor(&q, name, &[16, 16], quant, &i8s, &buf);
    }
    for (name, quant) in &u8_cases {
        check_tensor(&q, name, &[16, 4, 4], quant, &u8s, &buf);
    }
    for (name, quant) in &i16_cases {
        check_tensor(&q, name, &[8, 8], quant, &i16s, &buf);
    }
    for (name, quant) in &i32_cases {
        check_tensor(&q, name, &[3, 2], quant, &i32s, &buf);
    }
    // f32 by bits (-0.0 must stay -0.0).
    let t = q.tensor::<f32>("f32", &[1, 2, 1, 3, 1, 1]).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(t.data), bits(&f32s));
    assert_eq!(t.quant, Quant::None);
    check_tensor::<f32>(&q, "scalar", &[], &Quant::None, &[2.5], &buf);
    check_tensor::<i8>(&q, "empty", &[0, 5], &Quant::None, &[], &buf);

    let names: Vec<&str> = q.names().collect();
    let mut expected: Vec<&str> = Vec::new();
    for cases in [&i8_cases, &u8_cases, &i16_cases, &i32_cases] {
        expected.extend(cases.iter().map(|c| c.0));
    }
    expected.extend(["f32", "scalar", "empty"]);
    assert_eq!(names, expected);

    // Writing is deterministic.
    assert_eq!(bytes, w.to_bytes());
}

#[test]
fn empty_file_round_trips() {
    let b = QnbWriter::new().to_bytes();
    assert_eq!(b.len(), 64);
    let a = AlignedBytes::copy_from(&b);
    let q = Qnb::parse(&a).unwrap();
    assert_eq!(q.names().count(), 0);
    assert_eq!(q.meta("x"), Err(Error::ModelMeta { key: "x" }));
}

#[test]
fn aligned_bytes_read_round_trips_a_file() {
    let b = small();
    let path = std::env::temp_dir().join(format!("qneon-qnb-test-{}.qnb", std::process::id()));
    std::fs::write(&path, &b).unwrap();
    let a = AlignedBytes::read(&path);
    std::fs::remove_file(&path).unwrap();
    let a = a.unwrap();
    assert_eq!(&a[..], &b[..]);
    assert_eq!(a.as_ptr() as usize % ALIGN, 0);
    let q = Qnb::parse(&a).unwrap();
    assert_eq!(q.tensor::<u8>("u", &[3]).unwrap().data, &[0, 1, 255]);
    // The alignment survives moving the buffer.
    let moved = Box::new(a);
    assert_eq!(moved.as_ptr() as usize % ALIGN, 0);
    assert!(Qnb::parse(&moved).is_ok());
}

// ---------------------------------------------------------------------------
// Truncations and bit flips.
// ---------------------------------------------------------------------------

#[test]
fn every_truncation_is_rejected() {
    let b = small();
    for n in 0..b.len() {
        match parse_copy(&b[..n]) {
            Err(Error::ModelFile { problem, .. }) => {
                assert!(problem.contains("truncated"), "length {n}: {problem}")
            }
            other => panic!("length {n}: {other:?}"),
        }
    }
    assert!(parse_copy(&b).is_ok());
    // One byte too many is rejected too.
    let mut long = b.clone();
    long.push(0);
    assert_file_err(parse_copy(&long).unwrap_err(), 16, "longer");
}

#[test]
fn every_single_bit_flip_is_rejected() {
    let b = small();
    let mut a = AlignedBytes::copy_from(&b);
    for i in 0..b.len() {
        for bit in 0..8 {
            a[i] ^= 1 << bit;
            match Qnb::parse(&a) {
                Err(Error::ModelFile { .. }) => {}
                other => panic!("flip of byte {i} bit {bit}: {other:?}"),
            }
            a[i] ^= 1 << bit;
        }
    }
    assert!(Qnb::parse(&a).is_ok());
}

#[test]
fn checksum_catches_data_flips() {
    // A flip inside tensor data is rejected by the checksum alone: with the checksum
    // recomputed the file is structurally valid and holds the flipped value.
    let b = small();
    let off = rd_u64(&b, entry(U) + T_DATA_OFF) as usize;
    let mut c = b.clone();
    c[off + 1] ^= 0x80;
    assert_file_err(parse_copy(&c).unwrap_err(), 32, "checksum");
    fix_checksum(&mut c);
    let a = AlignedBytes::copy_from(&c);
    let q = Qnb::parse(&a).unwrap();
    assert_eq!(q.tensor::<u8>("u", &[3]).unwrap().data, &[0, 0x81, 255]);
}

#[test]
fn byte_rewrites_with_fixed_checksum_never_panic() {
    // Every byte set to a few values, checksum recomputed: parse may accept or
    // reject, but never panics, and an accepted file serves all its tensors.
    let b = small();
    let mut accepted = 0;
    for i in 0..b.len() {
        if (32..40).contains(&i) {
            continue;
        }
        for v in [
            0u8,
            1,
            0x3f,
            0x40,
            0x7f,
            0x80,
            0xff,
            b[i] ^ 1,
            b[i].wrapping_add(64),
        ] {
            let mut c = b.clone();
            c[i] = v;
            fix_checksum(&mut c);
            let a = AlignedBytes::copy_from(&c);
            if let Ok(q) = Qnb::parse(&a) {
                accepted += 1;
                for name in q.names() {
                    let (dtype, shape) = q.info(name).unwrap();
                    assert!(shape.len() <= 6);
                    let _ = dtype.size();
                }
                let _ = q.tensor::<i8>("w", &[2, 3]);
                let _ = q.tensor::<f32>("f", &[]);
            }
        }
    }
    assert!(accepted > 0);
}

// ---------------------------------------------------------------------------
// Structural validation, checksum recomputed.
// ---------------------------------------------------------------------------

#[test]
fn misaligned_buffer_is_rejected() {
    let b = small();
    let a = AlignedBytes::copy_from(&[vec![0u8], b.clone()].concat());
    assert_eq!(&a[1..], &b[..]);
    assert_file_err(Qnb::parse(&a[1..]).unwrap_err(), 0, "aligned");
}

#[test]
fn bad_header_fields_are_rejected() {
    assert_file_err(corrupt(|b| b[3] ^= 1), 0, "magic");
    assert_file_err(corrupt(|b| wr_u32(b, 8, 2)), 8, "version");
    assert_file_err(corrupt(|b| wr_u32(b, 8, 0)), 8, "version");
    assert_file_err(corrupt(|b| wr_u32(b, 12, 72)), 12, "header length");
    let len = small().len();
    assert_file_err(corrupt(|b| wr_u64(b, 16, len as u64 + 1)), len, "truncated");
    assert_file_err(corrupt(|b| wr_u64(b, 16, len as u64 - 1)), 16, "longer");
    assert_file_err(corrupt(|b| b[63] = 1), 40, "reserved");
    // Table counts larger than the file holds: no allocation, an error.
    assert_file_err(corrupt(|b| wr_u32(b, 24, u32::MAX)), 24, "tables");
    assert_file_err(corrupt(|b| wr_u32(b, 28, u32::MAX)), 24, "tables");
    assert_file_err(corrupt(|b| wr_u32(b, 28, 40)), 24, "tables");
}

#[test]
fn bad_names_are_rejected() {
    let m0 = HEADER;
    let t1 = entry(U);
    assert_file_err(corrupt(|b| b[t1..t1 + 64].fill(b'a')), t1, "NUL");
    assert_file_err(corrupt(|b| b[m0..m0 + 64].fill(b'k')), m0, "NUL");
    assert_file_err(corrupt(|b| b[t1] = 0xff), t1, "UTF-8");
    assert_file_err(
        corrupt(|b| b[t1..t1 + 3].copy_from_slice(&[0xc3, 0x28, 0])),
        t1,
        "UTF-8",
    );
    assert_file_err(corrupt(|b| b[t1] = 0), t1, "empty");
    assert_file_err(corrupt(|b| b[t1 + 40] = b'x'), t1, "after the name");
    // A valid non-ASCII name is fine.
    let mut w = QnbWriter::new();
    w.tensor::<i8>("größe", &[1], Quant::None, &[1]).unwrap();
    let a = AlignedBytes::copy_from(&w.to_bytes());
    assert_eq!(Qnb::parse(&a).unwrap().names().next(), Some("größe"));
}

#[test]
fn duplicate_names_are_rejected() {
    // Tensor "u" renamed to "w" (same length, so the field stays canonical).
    let t1 = entry(U);
    assert_file_err(corrupt(|b| b[t1] = b'w'), t1, "duplicate tensor name");
    // Metadata key "hidden" renamed to "seq_len".
    let m1 = HEADER + META_ENTRY;
    assert_file_err(
        corrupt(|b| b[m1..m1 + 8].copy_from_slice(b"seq_len\0")),
        m1,
        "duplicate metadata key",
    );
}

#[test]
fn bad_dtype_rank_and_shape_are_rejected() {
    let w = entry(W);
    let u = entry(U);
    assert_file_err(corrupt(|b| wr_u32(b, u + T_DTYPE, 5)), u + T_DTYPE, "dtype");
    assert_file_err(
        corrupt(|b| wr_u32(b, u + T_DTYPE, u32::MAX)),
        u + T_DTYPE,
        "dtype",
    );
    // u8 -> i16 of the same 3 elements: 6 bytes needed, 3 stored.
    assert_file_err(
        corrupt(|b| wr_u32(b, u + T_DTYPE, 2)),
        u + T_DATA_LEN,
        "data length",
    );
    assert_file_err(corrupt(|b| wr_u32(b, u + T_RANK, 7)), u + T_RANK, "rank");
    // Rank 1 -> 2: the second dimension is 0, so 0 elements but 3 bytes.
    assert_file_err(
        corrupt(|b| wr_u32(b, u + T_RANK, 2)),
        u + T_DATA_LEN,
        "data length",
    );
    // A dimension past the rank that is not zero.
    assert_file_err(
        corrupt(|b| wr_u64(b, u + T_DIMS + 8, 1)),
        u + T_DIMS + 8,
        "past the rank",
    );
    // Shape/length mismatch: [2, 3] -> [2, 4], and the length field alone.
    assert_file_err(
        corrupt(|b| wr_u64(b, w + T_DIMS + 8, 4)),
        w + T_DATA_LEN,
        "data length",
    );
    assert_file_err(
        corrupt(|b| wr_u64(b, w + T_DATA_LEN, 5)),
        w + T_DATA_LEN,
        "data length",
    );
    // Huge dimensions: no overflow, an error.
    assert_file_err(
        corrupt(|b| wr_u64(b, w + T_DIMS, u64::MAX)),
        w + T_DIMS,
        "larger than the file",
    );
    assert_file_err(
        corrupt(|b| {
            // Each dimension fits in the file, their product does not.
            wr_u64(b, w + T_DIMS, 1000);
            wr_u64(b, w + T_DIMS + 8, 1000);
        }),
        w + T_DIMS + 8,
        "more elements",
    );
    assert_file_err(
        corrupt(|b| wr_u64(b, w + T_DATA_LEN, u64::MAX)),
        w + T_DATA_LEN,
        "data length",
    );
}

#[test]
fn bad_offsets_are_rejected() {
    let len = small().len();
    let w = entry(W);
    let u = entry(U);
    let h = entry(H);
    let w_off = rd_u64(&small(), w + T_DATA_OFF);
    assert_file_err(
        corrupt(|b| add_u64(b, u + T_DATA_OFF, 1)),
        u + T_DATA_OFF,
        "multiple of 64",
    );
    assert_file_err(
        corrupt(|b| add_u64(b, u + T_DATA_OFF, 32)),
        u + T_DATA_OFF,
        "multiple of 64",
    );
    // Overlap: "u" placed on "w"'s data; "h" on "w"'s per-channel scales.
    assert_file_err(
        corrupt(|b| wr_u64(b, u + T_DATA_OFF, w_off)),
        u + T_DATA_OFF,
        "overlap",
    );
    assert_file_err(
        corrupt(|b| copy_u64(b, w + T_SCALES_OFF, h + T_DATA_OFF)),
        h + T_DATA_OFF,
        "overlap",
    );
    // Inside the header or tables.
    assert_file_err(
        corrupt(|b| wr_u64(b, u + T_DATA_OFF, 0)),
        u + T_DATA_OFF,
        "inside the header",
    );
    assert_file_err(
        corrupt(|b| wr_u64(b, u + T_DATA_OFF, 64)),
        u + T_DATA_OFF,
        "inside the header",
    );
    // Out of bounds: past the end, and starting inside but running past it.
    assert_file_err(
        corrupt(|b| wr_u64(b, u + T_DATA_OFF, u64::MAX - 63)),
        u + T_DATA_OFF,
        "past the end",
    );
    let last = (len - 1) / 64 * 64;
    let f = entry(F);
    assert_file_err(
        corrupt(|b| {
            // "f"'s 4 bytes are the file's last; put "u"'s 3 bytes after them.
            wr_u64(b, u + T_DATA_OFF, last as u64 + 64);
        }),
        u + T_DATA_OFF,
        "past the end",
    );
    assert_eq!(rd_u64(&small(), f + T_DATA_OFF) as usize + 4, len);
    assert_file_err(
        corrupt(|b| wr_u64(b, f + T_DATA_LEN, 8)),
        f + T_DATA_LEN,
        "data length",
    );
    assert_file_err(
        corrupt(|b| wr_u64(b, w + T_SCALES_OFF, last as u64 + 64)),
        w + T_SCALES_OFF,
        "past the end",
    );
    assert_file_err(
        corrupt(|b| add_u64(b, w + T_SCALES_OFF, 4)),
        w + T_SCALES_OFF,
        "multiple of 64",
    );
}

#[test]
fn bad_quant_params_are_rejected() {
    let w = entry(W);
    let u = entry(U);
    let h = entry(H);
    let f = entry(F);
    for bad in [
        0.0f32,
        -0.0,
        -0.1,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ] {
        assert_file_err(
            corrupt(|b| wr_u32(b, u + T_SCALE, bad.to_bits())),
            u + T_SCALE,
            "scale",
        );
        // A per-channel scale of the i8 weights.
        assert_file_err(
            corrupt(|b| {
                let so = rd_u64(b, w + T_SCALES_OFF) as usize;
                wr_u32(b, so + 4, bad.to_bits());
            }),
            w + T_SCALES_OFF,
            "per-channel scale",
        );
    }
    // Zero points outside u8 and i16.
    assert_file_err(
        corrupt(|b| wr_u32(b, u + T_ZP, 256)),
        u + T_ZP,
        "zero point",
    );
    assert_file_err(
        corrupt(|b| wr_u32(b, u + T_ZP, -1i32 as u32)),
        u + T_ZP,
        "zero point",
    );
    assert_file_err(
        corrupt(|b| wr_u32(b, h + T_ZP, 32768)),
        h + T_ZP,
        "zero point",
    );
    assert_file_err(
        corrupt(|b| wr_u32(b, h + T_ZP, -32769i32 as u32)),
        h + T_ZP,
        "zero point",
    );
    // Wrong per-channel count: "w" [2, 3] -> [3, 2] keeps the data length, so the
    // scale region is read as 3 scales; the third is the zero padding after the two
    // stored ones.
    assert_file_err(
        corrupt(|b| {
            wr_u64(b, w + T_DIMS, 3);
            wr_u64(b, w + T_DIMS + 8, 2);
        }),
        w + T_SCALES_OFF,
        "per-channel scale",
    );
    // Per-channel on a rank-0 tensor.
    assert_file_err(
        corrupt(|b| {
            wr_u32(b, f + T_DTYPE, 3); // i32 scalar, same 4 bytes
            wr_u32(b, f + T_QKIND, 2);
            copy_u64(b, w + T_SCALES_OFF, f + T_SCALES_OFF);
        }),
        f + T_RANK,
        "rank-0",
    );
    // Quantization kinds: unknown; on f32; stray fields for the other kinds.
    assert_file_err(
        corrupt(|b| wr_u32(b, u + T_QKIND, 3)),
        u + T_QKIND,
        "quantization kind",
    );
    assert_file_err(corrupt(|b| wr_u32(b, f + T_QKIND, 1)), f + T_QKIND, "f32");
    assert_file_err(
        corrupt(|b| wr_u32(b, u + T_QKIND, 0)),
        u + T_ZP,
        "zero point",
    );
    assert_file_err(corrupt(|b| wr_u32(b, w + T_ZP, 1)), w + T_ZP, "zero point");
    assert_file_err(
        corrupt(|b| wr_u32(b, f + T_SCALE, 1.0f32.to_bits())),
        f + T_SCALE,
        "scale field",
    );
    assert_file_err(
        corrupt(|b| wr_u64(b, u + T_SCALES_OFF, 1024)),
        u + T_SCALES_OFF,
        "not per-channel",
    );
    assert_file_err(
        corrupt(|b| wr_u32(b, u + T_RESERVED, 1)),
        u + T_RESERVED,
        "reserved",
    );
}

// ---------------------------------------------------------------------------
// Typed access errors.
// ---------------------------------------------------------------------------

#[test]
fn missing_tensor_wrong_dtype_and_wrong_shape_are_model_tensor_errors() {
    let a = AlignedBytes::copy_from(&small());
    let q = Qnb::parse(&a).unwrap();
    let tensor_err = |e: Error, name: &str, word: &str| match e {
        Error::ModelTensor { name: n, problem } => {
            assert_eq!(n, name);
            assert!(problem.contains(word), "{problem}");
            assert!(e.to_string().contains(name));
        }
        other => panic!("{other:?}"),
    };
    tensor_err(q.tensor::<i8>("nope", &[1]).unwrap_err(), "nope", "not in");
    tensor_err(q.tensor::<u8>("w", &[2, 3]).unwrap_err(), "w", "i8");
    tensor_err(q.tensor::<f32>("b", &[2]).unwrap_err(), "b", "i32");
    tensor_err(q.tensor::<i8>("w", &[3, 2]).unwrap_err(), "w", "shape");
    tensor_err(q.tensor::<i8>("w", &[6]).unwrap_err(), "w", "shape");
    tensor_err(q.tensor::<i8>("w", &[2, 3, 1]).unwrap_err(), "w", "shape");
    tensor_err(q.tensor::<f32>("f", &[1]).unwrap_err(), "f", "shape");
    assert_eq!(q.meta("seq_len"), Ok(4));
    assert_eq!(q.meta("hidden"), Ok(-3));
    assert_eq!(q.meta("layers"), Err(Error::ModelMeta { key: "layers" }));
    assert!(Error::ModelMeta { key: "layers" }
        .to_string()
        .contains("layers"));
    assert_eq!(q.info("nope"), None);
    assert_eq!(q.info("w"), Some((DType::I8, &[2usize, 3][..])));
}

// ---------------------------------------------------------------------------
// The writer rejects bad input.
// ---------------------------------------------------------------------------

#[test]
fn writer_rejects_bad_input() {
    let write = |e: Error, word: &str| match e {
        Error::ModelWrite { problem } => assert!(problem.contains(word), "{problem}"),
        other => panic!("{other:?}"),
    };
    let mut w = small_writer();
    write(
        w.tensor::<i8>("w", &[1], Quant::None, &[0]).unwrap_err(),
        "duplicate tensor",
    );
    write(w.meta("hidden", 1).unwrap_err(), "duplicate metadata");
    write(w.meta("", 1).unwrap_err(), "empty");
    write(w.meta(&"k".repeat(64), 1).unwrap_err(), "longer");
    assert!(w.meta(&"k".repeat(63), 1).is_ok());
    write(
        w.tensor::<i8>("a\0b", &[1], Quant::None, &[0]).unwrap_err(),
        "NUL",
    );
    write(
        w.tensor::<i8>("r7", &[1; 7], Quant::None, &[0])
            .unwrap_err(),
        "rank",
    );
    write(
        w.tensor::<i8>("ovf", &[usize::MAX, 2], Quant::None, &[0])
            .unwrap_err(),
        "overflow",
    );
    assert_eq!(
        w.tensor::<i16>("len", &[2, 3], Quant::None, &[0; 5]),
        Err(Error::Kernel(qneon::Error::Length {
            op: "qnb writer",
            what: "tensor data",
            expected: 6,
            got: 5
        }))
    );
    for bad in [0.0f32, -1.0, f32::NAN, f32::INFINITY] {
        let e = w
            .tensor::<i8>(
                "s",
                &[1],
                Quant::PerTensor {
                    scale: bad,
                    zero_point: 0,
                },
                &[0],
            )
            .unwrap_err();
        assert!(
            matches!(e, Error::Kernel(qneon::Error::Scale { .. })),
            "{e:?}"
        );
        let e = w
            .tensor::<i8>(
                "s",
                &[2],
                Quant::PerChannel {
                    scales: vec![1.0, bad],
                },
                &[0, 0],
            )
            .unwrap_err();
        assert!(
            matches!(e, Error::Kernel(qneon::Error::Scale { .. })),
            "{e:?}"
        );
    }
    let zp = |w: &mut QnbWriter, z: i32| {
        w.tensor::<u8>(
            "z",
            &[1],
            Quant::PerTensor {
                scale: 1.0,
                zero_point: z,
            },
            &[0],
        )
    };
    assert_eq!(
        zp(&mut w, 256),
        Err(Error::Kernel(qneon::Error::ZeroPoint {
            what: "tensor zero point",
            value: 256,
            min: 0,
            max: 255
        }))
    );
    assert!(matches!(
        zp(&mut w, -1),
        Err(Error::Kernel(qneon::Error::ZeroPoint { .. }))
    ));
    assert_eq!(
        w.tensor::<i8>(
            "pc",
            &[3, 1],
            Quant::PerChannel {
                scales: vec![1.0, 2.0]
            },
            &[0; 3]
        ),
        Err(Error::Kernel(qneon::Error::Length {
            op: "qnb writer",
            what: "per-channel scales",
            expected: 3,
            got: 2
        }))
    );
    write(
        w.tensor::<i8>("pc0", &[], Quant::PerChannel { scales: vec![] }, &[0])
            .unwrap_err(),
        "rank",
    );
    write(
        w.tensor::<f32>(
            "fq",
            &[1],
            Quant::PerTensor {
                scale: 1.0,
                zero_point: 0,
            },
            &[0.0],
        )
        .unwrap_err(),
        "f32",
    );
    // After all those rejections the file is still the valid small file plus one key.
    let a = AlignedBytes::copy_from(&w.to_bytes());
    let q = Qnb::parse(&a).unwrap();
    assert_eq!(q.names().collect::<Vec<_>>(), ["w", "u", "h", "b", "f"]);
    assert_eq!(q.metas().count(), 3);
}
