#pragma once
// Criteo-shaped samples in swp record files: 13 dense features, one multi-hot bag of ids per
// sparse feature (table), a click label drawn from a fixed random "teacher" so that the labels
// are learnable. No torch here: the generator and the parser work on plain host memory.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "swp/io/batch.hpp"

namespace dlrm {

/// What a dataset's samples look like, and the teacher that labels them.
struct DataSpec {
  int dense = 13;              ///< dense features per sample (Criteo: 13)
  int tables = 8;              ///< sparse features, one embedding table each
  std::int64_t rows = 20'000;  ///< ids of every table are in [0, rows)
  int max_bag = 6;             ///< ids per bag: 1 .. max_bag
  std::uint64_t seed = 2019;   ///< the teacher's and the samples' seed

  /// "tables=8 rows=20000 dense=13 max_bag=6 seed=2019": what a dataset directory records, so
  /// that one written for other sizes is not read by mistake.
  [[nodiscard]] std::string describe() const;
};

/// Samples in host memory, in batch order: what the H2D task parses a loader batch into.
struct HostBatch {
  std::size_t samples = 0;
  std::vector<float> dense;                      ///< samples × spec.dense, row-major
  std::vector<float> labels;                     ///< samples, 0 or 1
  std::vector<std::vector<std::int64_t>> lengths;  ///< per table: ids in each sample's bag
  std::vector<std::vector<std::int64_t>> ids;      ///< per table: the bags' ids, back to back
};

/// One sample's record payload: u32 magic "DLRM", u32 dense count, u32 table count, f32 label,
/// f32 dense[], u32 bag length per table, u32 ids (the bags back to back). Sample `index`
/// of a dataset is a pure function of (spec, index): any rank can tell what it should be.
[[nodiscard]] std::vector<std::byte> make_sample(const DataSpec& spec, std::uint64_t index);

/// Writes samples [first, first + count) into `files` record files in `dir` (created), named
/// as swp::io::generated_file_name names them (part-00000.swprec, ...: name order is sample
/// order), consecutive runs per file. Throws what RecordWriter throws.
void write_dataset(const std::filesystem::path& dir, const DataSpec& spec, std::uint64_t first,
                   std::uint64_t count, int files);

/// Whether `dir` holds a dataset written for `spec` with `samples` samples (its stamp file).
[[nodiscard]] bool dataset_matches(const std::filesystem::path& dir, const DataSpec& spec,
                                   std::uint64_t samples);
/// Writes the stamp dataset_matches() reads (after write_dataset succeeded).
void stamp_dataset(const std::filesystem::path& dir, const DataSpec& spec, std::uint64_t samples);

/// Appends the samples of `batch` to `out` (whose lengths/ids have spec.tables lists).
/// Throws std::runtime_error naming the record (its batch position, file number and record
/// number) for a payload of the wrong size or shape, a label other than 0 or 1, or an id out
/// of [0, rows): a corrupt record fails the task that parses it.
void append_batch(const swp::io::Batch& batch, const DataSpec& spec, HostBatch& out);

/// An empty HostBatch with one list per table.
[[nodiscard]] HostBatch empty_batch(const DataSpec& spec);

}  // namespace dlrm
