#include "criteo_data.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "swp/io/dataset.hpp"
#include "swp/io/record_writer.hpp"

namespace dlrm {

namespace {

constexpr std::uint32_t magic = 0x4D524C44;  // "DLRM" little-endian

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t s = a * 0x9E3779B97F4A7C15ull ^ b;
  return splitmix64(s);
}

// A uniform in [0, 1) from 53 bits.
double uniform(std::uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

double gaussian(std::uint64_t& state) {
  const double u1 = std::max(uniform(state), 1e-300);
  const double u2 = uniform(state);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// The teacher: a fixed random function of the features, seeded by the spec alone.
// Dense part: a linear term and one product of two features; sparse part: a value per (table,
// id), averaged over the bag. Popular ids (small ones: see make_sample) carry most samples, so
// a student sees them often enough to learn their values.
double teacher_dense_weight(const DataSpec& spec, int d) {
  std::uint64_t s = mix(spec.seed, 0x1000 + static_cast<std::uint64_t>(d));
  return 0.8 * gaussian(s);
}

double teacher_id_value(const DataSpec& spec, int table, std::int64_t id) {
  std::uint64_t s = mix(mix(spec.seed, 0x2000 + static_cast<std::uint64_t>(table)),
                        static_cast<std::uint64_t>(id));
  return gaussian(s);
}

template <class T>
void put(std::vector<std::byte>& out, T value) {
  const auto at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

template <class T>
T get(std::span<const std::byte> in, std::size_t& at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof(T));
  at += sizeof(T);
  return value;
}

}  // namespace

std::string DataSpec::describe() const {
  std::ostringstream out;
  out << "tables=" << tables << " rows=" << rows << " dense=" << dense << " max_bag=" << max_bag
      << " seed=" << seed;
  return out.str();
}

std::vector<std::byte> make_sample(const DataSpec& spec, std::uint64_t index) {
  std::uint64_t s = mix(mix(spec.seed, 0x3000), index);
  std::vector<float> dense(static_cast<std::size_t>(spec.dense));
  double logit = -0.2;
  for (int d = 0; d < spec.dense; ++d) {
    dense[static_cast<std::size_t>(d)] = static_cast<float>(gaussian(s));
    logit += teacher_dense_weight(spec, d) * dense[static_cast<std::size_t>(d)] /
             std::sqrt(static_cast<double>(spec.dense)) * 2.0;
  }
  if (spec.dense >= 2) logit += 0.5 * dense[0] * dense[1];
  std::vector<std::uint32_t> lengths(static_cast<std::size_t>(spec.tables));
  std::vector<std::uint32_t> ids;
  for (int t = 0; t < spec.tables; ++t) {
    const auto n = 1 + static_cast<std::uint32_t>(splitmix64(s) % static_cast<std::uint64_t>(spec.max_bag));
    lengths[static_cast<std::size_t>(t)] = n;
    double bag = 0;
    for (std::uint32_t k = 0; k < n; ++k) {
      // Skewed towards small ids (u^3): a few thousand ids take most draws.
      const double u = uniform(s);
      const auto id = std::min<std::int64_t>(
          spec.rows - 1, static_cast<std::int64_t>(static_cast<double>(spec.rows) * u * u * u));
      ids.push_back(static_cast<std::uint32_t>(id));
      bag += teacher_id_value(spec, t, id);
    }
    logit += 1.2 * bag / n / std::sqrt(static_cast<double>(spec.tables)) * 2.0;
  }
  const double p = 1.0 / (1.0 + std::exp(-logit));
  const float label = uniform(s) < p ? 1.0f : 0.0f;

  std::vector<std::byte> out;
  put(out, magic);
  put(out, static_cast<std::uint32_t>(spec.dense));
  put(out, static_cast<std::uint32_t>(spec.tables));
  put(out, label);
  for (float x : dense) put(out, x);
  for (std::uint32_t n : lengths) put(out, n);
  for (std::uint32_t id : ids) put(out, id);
  return out;
}

void write_dataset(const std::filesystem::path& dir, const DataSpec& spec, std::uint64_t first,
                   std::uint64_t count, int files) {
  std::filesystem::create_directories(dir);
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".swprec") std::filesystem::remove(entry.path());
  const auto per_file = (count + static_cast<std::uint64_t>(files) - 1) / static_cast<std::uint64_t>(files);
  std::uint64_t next = first;
  for (int f = 0; f < files && next < first + count; ++f) {
    // The library's names (numbers as wide as the largest): list_dataset's name order, which
    // the loader reads in, is the order the samples were written in, past 100,000 files too.
    const auto name = swp::io::generated_file_name(static_cast<std::uint64_t>(f),
                                                   static_cast<std::uint64_t>(files));
    swp::io::RecordWriter out(dir / name);
    const std::uint64_t end = std::min(first + count, next + per_file);
    for (; next < end; ++next) {
      const auto sample = make_sample(spec, next);
      out.append(sample);
    }
    out.close();
  }
}

bool dataset_matches(const std::filesystem::path& dir, const DataSpec& spec,
                     std::uint64_t samples) {
  std::ifstream in(dir / "dlrm-dataset.txt");
  std::string line;
  std::getline(in, line);
  return in && line == spec.describe() + " samples=" + std::to_string(samples);
}

void stamp_dataset(const std::filesystem::path& dir, const DataSpec& spec, std::uint64_t samples) {
  std::ofstream out(dir / "dlrm-dataset.txt");
  out << spec.describe() << " samples=" << samples << "\n";
  if (!out) throw std::runtime_error("cannot write " + (dir / "dlrm-dataset.txt").string());
}

HostBatch empty_batch(const DataSpec& spec) {
  HostBatch out;
  out.lengths.resize(static_cast<std::size_t>(spec.tables));
  out.ids.resize(static_cast<std::size_t>(spec.tables));
  return out;
}

void append_batch(const swp::io::Batch& batch, const DataSpec& spec, HostBatch& out) {
  const auto D = static_cast<std::size_t>(spec.dense);
  const auto T = static_cast<std::size_t>(spec.tables);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto rec = batch.record(i);
    const auto fail = [&](const std::string& why) {
      const auto ref = batch.ref(i);
      throw std::runtime_error("corrupt sample: record " + std::to_string(i) + " of batch " +
                               std::to_string(batch.number()) + " (file " +
                               std::to_string(ref.file) + ", record " +
                               std::to_string(ref.record) + "): " + why);
    };
    const std::size_t fixed = 4 * 4 + 4 * D + 4 * T;
    if (rec.size() < fixed) fail("payload of " + std::to_string(rec.size()) + " bytes is too short");
    std::size_t at = 0;
    if (get<std::uint32_t>(rec, at) != magic) fail("bad magic");
    if (get<std::uint32_t>(rec, at) != D || get<std::uint32_t>(rec, at) != T)
      fail("written for other sizes than " + spec.describe());
    const float label = get<float>(rec, at);
    if (label != 0.0f && label != 1.0f) fail("label " + std::to_string(label) + " is not 0 or 1");
    out.labels.push_back(label);
    for (std::size_t d = 0; d < D; ++d) out.dense.push_back(get<float>(rec, at));
    std::vector<std::uint32_t> lengths(T);
    std::size_t total = 0;
    for (auto& n : lengths) total += (n = get<std::uint32_t>(rec, at));
    if (rec.size() != fixed + 4 * total)
      fail("payload of " + std::to_string(rec.size()) + " bytes, its bags need " +
           std::to_string(fixed + 4 * total));
    for (std::size_t t = 0; t < T; ++t) {
      out.lengths[t].push_back(lengths[t]);
      for (std::uint32_t k = 0; k < lengths[t]; ++k) {
        const auto id = static_cast<std::int64_t>(get<std::uint32_t>(rec, at));
        if (id >= spec.rows)
          fail("id " + std::to_string(id) + " of table " + std::to_string(t) +
               " is out of range (" + std::to_string(spec.rows) + " rows)");
        out.ids[t].push_back(id);
      }
    }
    ++out.samples;
  }
}

}  // namespace dlrm
