#pragma once
// The io layer: record files, datasets and the asynchronous data loader (docs/io.md).

#include "swp/io/batch.hpp"
#include "swp/io/dataset.hpp"
#include "swp/io/io_errors.hpp"
#include "swp/io/loader.hpp"
#include "swp/io/loader_options.hpp"
#include "swp/io/progress_meter.hpp"
#include "swp/io/read_order.hpp"
#include "swp/io/record_file.hpp"
#include "swp/io/record_format.hpp"
#include "swp/io/record_writer.hpp"
