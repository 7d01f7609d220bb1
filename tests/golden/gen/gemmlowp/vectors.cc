// Golden-vector generator: runs gemmlowp's own fixed-point code
// (fixedpoint/fixedpoint.h, scalar std::int32_t path) on a fixed, seeded set
// of inputs and writes the results as JSON lines.
//
// Built and run by generate.py next to this file, which adds the include path
// of the gemmlowp headers shipped in the tensorflow wheel and prepends the
// provenance header line to each output file. See README.md.
//
// Usage:
//   vectors --info                      build facts as one JSON object
//   vectors PRIMITIVES.jsonl Q31.jsonl  write the record lines (no header)
//
// Every value here is a raw std::int32_t. Only the scalar generic templates of
// fixedpoint.h are instantiated (the raw type is std::int32_t everywhere), so
// whatever SIMD macros detect_platform.h defines, no SIMD specialisation runs.

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "fixedpoint/fixedpoint.h"

namespace {

using i32 = std::int32_t;
using i64 = std::int64_t;

constexpr i32 kMin = std::numeric_limits<i32>::min();
constexpr i32 kMax = std::numeric_limits<i32>::max();

// Seed of the input generator; recorded in the provenance header.
constexpr std::uint64_t kSeed = 0x71E0'6E11'0001ull;

// Integer-bit counts. exp is also run with 29 (tanh on 28 integer bits
// evaluates exp with 29); logistic and tanh stop at 28 like qneon's q31 API.
constexpr int kMaxIntegerBitsExp = 29;
constexpr int kMaxIntegerBitsActivation = 28;

// ---------------------------------------------------------------------------
// Deterministic pseudo-random numbers (splitmix64), so the inputs do not
// depend on the C++ standard library's distributions.

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [lo, hi], both inclusive (modulo bias is irrelevant here).
  i64 range(i64 lo, i64 hi) {
    const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<i64>(next() % span);
  }

  // Uniform over all of int32.
  i32 any_i32() { return static_cast<i32>(static_cast<std::uint32_t>(next())); }

  // A value whose magnitude has a uniformly chosen bit length (0..=31), with a
  // random sign: covers small and large magnitudes evenly on a log scale.
  i32 log_magnitude() {
    const int bits = static_cast<int>(range(0, 31));
    const i64 magnitude = static_cast<i64>(next() & ((std::uint64_t{1} << bits) - 1));
    return static_cast<i32>((next() & 1) ? -magnitude : magnitude);
  }

  // Uniform in [-2^k, 2^k] for a random k in 0..=20.
  i32 small() {
    const int k = static_cast<int>(range(0, 20));
    return static_cast<i32>(range(-(i64{1} << k), i64{1} << k));
  }

 private:
  std::uint64_t state_;
};

bool fits_i32(i64 v) { return v >= kMin && v <= kMax; }

// An ordered list of distinct values.
class ValueSet {
 public:
  void add(i64 v) {
    if (fits_i32(v) && seen_.insert(static_cast<i32>(v)).second) {
      values_.push_back(static_cast<i32>(v));
    }
  }
  const std::vector<i32>& values() const { return values_; }
  std::size_t size() const { return values_.size(); }

 private:
  std::set<i32> seen_;
  std::vector<i32> values_;
};

// i32::MIN, MIN+1, MIN+2, -2^30, +-2^k, +-2^k +- 1 for several k, -1, 0, 1, 2,
// MAX-1, MAX.
std::vector<i32> edge_values() {
  ValueSet s;
  for (i64 v : {i64{kMin}, i64{kMin} + 1, i64{kMin} + 2, -(i64{1} << 30), i64{-1}, i64{0},
                i64{1}, i64{2}, i64{kMax} - 1, i64{kMax}}) {
    s.add(v);
  }
  for (int k : {1, 2, 3, 4, 5, 8, 12, 15, 16, 20, 24, 27, 28, 29, 30}) {
    const i64 p = i64{1} << k;
    for (i64 v : {p - 1, p, p + 1}) {
      s.add(v);
      s.add(-v);
    }
  }
  return s.values();
}

// ---------------------------------------------------------------------------
// Output.

class Writer {
 public:
  explicit Writer(const char* path) : file_(std::fopen(path, "w")) {
    if (!file_) {
      std::perror(path);
      std::exit(1);
    }
  }
  ~Writer() {
    if (std::fclose(file_) != 0) {
      std::perror("fclose");
      std::exit(1);
    }
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void binary(const char* fn, const char* ka, i32 a, const char* kb, i32 b, i32 out) {
    std::fprintf(file_, "{\"fn\":\"%s\",\"%s\":%" PRId32 ",\"%s\":%" PRId32 ",\"out\":%" PRId32 "}\n", fn, ka,
                 a, kb, b, out);
  }
  void unary(const char* fn, i32 a, i32 out) {
    std::fprintf(file_, "{\"fn\":\"%s\",\"a\":%" PRId32 ",\"out\":%" PRId32 "}\n", fn, a, out);
  }
  void array(const char* fn, int n, const std::vector<i32>& x, const std::vector<i32>& out) {
    std::fprintf(file_, "{\"fn\":\"%s\",\"n\":%d,\"x\":", fn, n);
    list(x);
    std::fputs(",\"out\":", file_);
    list(out);
    std::fputs("}\n", file_);
  }

 private:
  void list(const std::vector<i32>& v) {
    std::fputc('[', file_);
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::fprintf(file_, i ? ",%" PRId32 : "%" PRId32, v[i]);
    }
    std::fputc(']', file_);
  }
  std::FILE* file_;
};

// ---------------------------------------------------------------------------
// Thin wrappers that pin every gemmlowp call to the scalar std::int32_t path.

i32 srdhm(i32 a, i32 b) { return gemmlowp::SaturatingRoundingDoublingHighMul<i32>(a, b); }
i32 rdbpot(i32 x, int e) { return gemmlowp::RoundingDivideByPOT<i32, int>(x, e); }
i32 rhs(i32 a, i32 b) { return gemmlowp::RoundingHalfSum<i32>(a, b); }

using F0 = gemmlowp::FixedPoint<i32, 0>;

i32 exp_interval(i32 a) {
  return gemmlowp::exp_on_interval_between_negative_one_quarter_and_0_excl(F0::FromRaw(a)).raw();
}
i32 one_over_one_plus_x(i32 a) { return gemmlowp::one_over_one_plus_x_for_x_in_0_1(F0::FromRaw(a)).raw(); }
i32 one_minus_x_over_one_plus_x(i32 a) {
  return gemmlowp::one_minus_x_over_one_plus_x_for_x_in_0_1(F0::FromRaw(a)).raw();
}

// SaturatingRoundingMultiplyByPOT<E> takes E as a template argument: one
// instantiation per E in -31..=31, looked up by E at run time.
using UnaryFn = i32 (*)(i32);
constexpr int kPotMin = -31;
constexpr int kPotCount = 63;

template <int E>
i32 srmbpot_instance(i32 x) {
  return gemmlowp::SaturatingRoundingMultiplyByPOT<E>(x);
}
template <int... I>
constexpr std::array<UnaryFn, sizeof...(I)> srmbpot_table(std::integer_sequence<int, I...>) {
  return {{&srmbpot_instance<I + kPotMin>...}};
}
constexpr std::array<UnaryFn, kPotCount> kSrmbpot = srmbpot_table(std::make_integer_sequence<int, kPotCount>{});
i32 srmbpot(i32 x, int e) { return kSrmbpot[e - kPotMin](x); }

// The q31 functions on FixedPoint<int32, N>, one instantiation per N.
template <int N>
i32 exp_instance(i32 x) {
  return gemmlowp::exp_on_negative_values(gemmlowp::FixedPoint<i32, N>::FromRaw(x)).raw();
}
template <int N>
i32 logistic_instance(i32 x) {
  return gemmlowp::logistic(gemmlowp::FixedPoint<i32, N>::FromRaw(x)).raw();
}
template <int N>
i32 tanh_instance(i32 x) {
  return gemmlowp::tanh(gemmlowp::FixedPoint<i32, N>::FromRaw(x)).raw();
}
template <int... N>
constexpr std::array<UnaryFn, sizeof...(N)> exp_table(std::integer_sequence<int, N...>) {
  return {{&exp_instance<N>...}};
}
template <int... N>
constexpr std::array<UnaryFn, sizeof...(N)> logistic_table(std::integer_sequence<int, N...>) {
  return {{&logistic_instance<N>...}};
}
template <int... N>
constexpr std::array<UnaryFn, sizeof...(N)> tanh_table(std::integer_sequence<int, N...>) {
  return {{&tanh_instance<N>...}};
}
constexpr auto kExp = exp_table(std::make_integer_sequence<int, kMaxIntegerBitsExp + 1>{});
constexpr auto kLogistic = logistic_table(std::make_integer_sequence<int, kMaxIntegerBitsActivation + 1>{});
constexpr auto kTanh = tanh_table(std::make_integer_sequence<int, kMaxIntegerBitsActivation + 1>{});

// ---------------------------------------------------------------------------
// gemmlowp_primitives.jsonl

void write_primitives(const char* path) {
  Writer w(path);
  Rng rng(kSeed);
  const std::vector<i32> edges = edge_values();

  // Random values: uniform over int32 and uniform over small ranges.
  std::vector<i32> random;
  for (int i = 0; i < 2000; ++i) random.push_back(rng.any_i32());
  for (int i = 0; i < 1000; ++i) random.push_back(rng.small());
  std::vector<i32> all = edges;
  all.insert(all.end(), random.begin(), random.end());
  auto pick = [&]() { return all[static_cast<std::size_t>(rng.range(0, static_cast<i64>(all.size()) - 1))]; };

  // SaturatingRoundingDoublingHighMul: every pair of edge values, each random
  // value against a random partner, and exact ties (a * b = (2m + 1) * 2^30)
  // with their neighbours.
  for (i32 a : edges)
    for (i32 b : edges) w.binary("srdhm", "a", a, "b", b, srdhm(a, b));
  for (i32 a : random) {
    const i32 b = pick();
    w.binary("srdhm", "a", a, "b", b, srdhm(a, b));
  }
  for (int i = 0; i < 300; ++i) {
    const int p = static_cast<int>(rng.range(0, 30));
    const i64 a = (rng.next() & 1) ? -(i64{1} << p) : (i64{1} << p);
    const i64 m = rng.range(0, (i64{1} << p) - 1);
    const i64 b = ((rng.next() & 1) ? -1 : 1) * ((2 * m + 1) << (30 - p));
    for (i64 bb : {b - 1, b, b + 1}) {
      if (fits_i32(a) && fits_i32(bb)) {
        w.binary("srdhm", "a", static_cast<i32>(a), "b", static_cast<i32>(bb),
                 srdhm(static_cast<i32>(a), static_cast<i32>(bb)));
      }
    }
  }

  // RoundingDivideByPOT: edges for every exponent, random values with a random
  // exponent, and exact ties (2k + 1) * 2^(e - 1) with their neighbours.
  for (i32 x : edges)
    for (int e = 0; e <= 31; ++e) w.binary("rdbpot", "x", x, "e", e, rdbpot(x, e));
  for (i32 x : random) {
    const int e = static_cast<int>(rng.range(0, 31));
    w.binary("rdbpot", "x", x, "e", e, rdbpot(x, e));
  }
  for (int i = 0; i < 300; ++i) {
    const int e = static_cast<int>(rng.range(1, 31));
    const i64 k = rng.range(0, (i64{1} << (31 - e)) - 1);
    const i64 x = ((rng.next() & 1) ? -1 : 1) * ((2 * k + 1) << (e - 1));
    for (i64 xx : {x - 1, x, x + 1}) {
      if (fits_i32(xx)) w.binary("rdbpot", "x", static_cast<i32>(xx), "e", e, rdbpot(static_cast<i32>(xx), e));
    }
  }

  // SaturatingRoundingMultiplyByPOT<E>: edges for every E, random values with
  // a random E, and the saturation thresholds +-2^(31 - E) +- 1 for E > 0.
  for (i32 x : edges)
    for (int e = -31; e <= 31; ++e) w.binary("srmbpot", "x", x, "e", e, srmbpot(x, e));
  for (i32 x : random) {
    const int e = static_cast<int>(rng.range(-31, 31));
    w.binary("srmbpot", "x", x, "e", e, srmbpot(x, e));
  }
  for (int e = 1; e <= 31; ++e) {
    const i64 t = i64{1} << (31 - e);
    for (i64 x : {t - 1, t, t + 1, -t - 1, -t, -t + 1}) {
      if (fits_i32(x)) w.binary("srmbpot", "x", static_cast<i32>(x), "e", e, srmbpot(static_cast<i32>(x), e));
    }
  }

  // RoundingHalfSum (the scalar int32 specialisation): every edge value
  // against the extremes and the values around 0 and +-2^30 (the sum is
  // computed in 64 bits, so these cover its overflow and tie cases), and
  // random values against a random partner.
  for (i32 a : edges)
    for (i64 b : {i64{kMin}, i64{kMin} + 1, i64{kMin} + 2, -(i64{1} << 30) - 1, -(i64{1} << 30),
                  -(i64{1} << 30) + 1, i64{-3}, i64{-2}, i64{-1}, i64{0}, i64{1}, i64{2}, i64{3},
                  (i64{1} << 30) - 1, i64{1} << 30, (i64{1} << 30) + 1, i64{kMax} - 2, i64{kMax} - 1,
                  i64{kMax}})
      w.binary("rhs", "a", a, "b", static_cast<i32>(b), rhs(a, static_cast<i32>(b)));
  for (i32 a : random) {
    const i32 b = pick();
    w.binary("rhs", "a", a, "b", b, rhs(a, b));
  }

  // exp on [-1/4, 0): a in [-2^29, 0).
  {
    ValueSet s;
    for (int k = 0; k <= 29; ++k) {
      const i64 p = i64{1} << k;
      for (i64 v : {-p - 1, -p, -p + 1}) {
        if (v >= -(i64{1} << 29) && v < 0) s.add(v);
      }
    }
    for (int i = 0; i < 2000; ++i) s.add(rng.range(-(i64{1} << 29), -1));
    for (int i = 0; i < 500; ++i) {
      const int bits = static_cast<int>(rng.range(0, 29));
      s.add(-rng.range(1, i64{1} << bits));
    }
    for (i32 a : s.values()) w.unary("exp_interval", a, exp_interval(a));
  }

  // The reciprocals on [0, 1): a in [0, 2^31).
  {
    ValueSet s;
    for (i64 v : {i64{0}, i64{1}, i64{2}, i64{kMax} - 1, i64{kMax}}) s.add(v);
    for (int k = 1; k <= 30; ++k) {
      const i64 p = i64{1} << k;
      for (i64 v : {p - 1, p, p + 1}) s.add(v);
    }
    for (int i = 0; i < 2000; ++i) s.add(rng.range(0, kMax));
    for (int i = 0; i < 500; ++i) {
      const int bits = static_cast<int>(rng.range(0, 31));
      s.add(rng.range(0, (i64{1} << bits) - 1));
    }
    for (i32 a : s.values()) w.unary("one_over_one_plus_x", a, one_over_one_plus_x(a));
    for (i32 a : s.values()) w.unary("one_minus_x_over_one_plus_x", a, one_minus_x_over_one_plus_x(a));
  }
}

// ---------------------------------------------------------------------------
// gemmlowp_q31.jsonl

std::vector<i32> sorted(const ValueSet& s) {
  std::vector<i32> v = s.values();
  std::sort(v.begin(), v.end());
  return v;
}

// Inputs <= 0 for exp_on_negative_values on FixedPoint<int32, n>.
std::vector<i32> exp_inputs(int n, Rng& rng) {
  ValueSet s;
  for (i64 v : {i64{kMin}, i64{kMin} + 1, i64{kMin} + 2, i64{-1}, i64{0}}) s.add(v);
  for (int k = 1; k <= 30; ++k) {
    const i64 p = i64{1} << k;
    for (i64 v : {-p - 1, -p, -p + 1}) s.add(v);
  }
  // Quarter boundaries: multiples of 2^(31 - n - 2) (exactly k/4), and their
  // neighbours, down to -33 (past the clamp at -32) where representable,
  // then a few random multiples further down.
  const i64 quarter = i64{1} << (29 - n);
  for (i64 k = 0; k <= 33 * 4; ++k) {
    const i64 v = -k * quarter;
    for (i64 vv : {v - 1, v, v + 1}) {
      if (vv <= 0) s.add(vv);
    }
  }
  const i64 max_k = -i64{kMin} / quarter;
  for (int i = 0; i < 32; ++i) s.add(-rng.range(0, max_k) * quarter);
  // Random raw values <= 0: uniform and log-uniform magnitudes.
  for (int i = 0; i < 200; ++i) s.add(-rng.range(0, -i64{kMin}));
  for (int i = 0; i < 200; ++i) {
    const i32 v = rng.log_magnitude();
    s.add(v > 0 ? -i64{v} : i64{v});
  }
  return sorted(s);
}

// Inputs of both signs for logistic and tanh on FixedPoint<int32, n>.
std::vector<i32> activation_inputs(Rng& rng) {
  ValueSet s;
  for (i64 v : {i64{kMin}, i64{kMin} + 1, i64{kMin} + 2, i64{-1}, i64{0}, i64{1}, i64{kMax} - 1, i64{kMax}}) s.add(v);
  for (int k = 1; k <= 30; ++k) {
    const i64 p = i64{1} << k;
    for (i64 v : {p - 1, p, p + 1}) {
      s.add(v);
      s.add(-v);
    }
  }
  for (int i = 0; i < 200; ++i) s.add(rng.any_i32());
  for (int i = 0; i < 200; ++i) s.add(rng.log_magnitude());
  return sorted(s);
}

std::vector<i32> apply(UnaryFn f, const std::vector<i32>& x) {
  std::vector<i32> y;
  y.reserve(x.size());
  for (i32 v : x) y.push_back(f(v));
  return y;
}

void write_q31(const char* path) {
  Writer w(path);
  Rng rng(kSeed ^ 0x0031'0031'0031ull);
  for (int n = 0; n <= kMaxIntegerBitsExp; ++n) {
    const std::vector<i32> x = exp_inputs(n, rng);
    w.array("exp_on_negative_values", n, x, apply(kExp[static_cast<std::size_t>(n)], x));
  }
  for (int n = 0; n <= kMaxIntegerBitsActivation; ++n) {
    const std::vector<i32> x = activation_inputs(rng);
    w.array("logistic", n, x, apply(kLogistic[static_cast<std::size_t>(n)], x));
    w.array("tanh", n, x, apply(kTanh[static_cast<std::size_t>(n)], x));
  }
}

// ---------------------------------------------------------------------------

void print_info() {
  std::printf("{\"compiler\":\"%s\",\"cplusplus\":%ld,\"seed\":\"0x%016" PRIx64 "\"", __VERSION__,
              static_cast<long>(__cplusplus), kSeed);
  std::printf(",\"asserts\":%s", 
#ifdef NDEBUG
              "false"
#else
              "true"
#endif
  );
  std::printf(",\"constants_checks\":%s",
#ifdef GEMMLOWP_ENABLE_FIXEDPOINT_CONSTANTS_CHECKS
              "true"
#else
              "false"
#endif
  );
  // SIMD paths detect_platform.h enabled (none are used for std::int32_t).
  std::printf(",\"gemmlowp_simd_macros\":[");
  const char* sep = "";
#define QNEON_REPORT_MACRO(M) \
  std::printf("%s\"" #M "\"", sep); \
  sep = ",";
#ifdef GEMMLOWP_NEON
  QNEON_REPORT_MACRO(GEMMLOWP_NEON)
#endif
#ifdef GEMMLOWP_SSE4
  QNEON_REPORT_MACRO(GEMMLOWP_SSE4)
#endif
#ifdef GEMMLOWP_SSE3
  QNEON_REPORT_MACRO(GEMMLOWP_SSE3)
#endif
#ifdef GEMMLOWP_AVX2
  QNEON_REPORT_MACRO(GEMMLOWP_AVX2)
#endif
#ifdef GEMMLOWP_MSA
  QNEON_REPORT_MACRO(GEMMLOWP_MSA)
#endif
#ifdef GEMMLOWP_WASMSIMD
  QNEON_REPORT_MACRO(GEMMLOWP_WASMSIMD)
#endif
#undef QNEON_REPORT_MACRO
  (void)sep;
  std::printf("],\"exp_integer_bits\":[0,%d],\"activation_integer_bits\":[0,%d]}\n", kMaxIntegerBitsExp,
              kMaxIntegerBitsActivation);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--info") == 0) {
    print_info();
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s --info | %s PRIMITIVES.jsonl Q31.jsonl\n", argv[0], argv[0]);
    return 2;
  }
  write_primitives(argv[1]);
  write_q31(argv[2]);
  return 0;
}
