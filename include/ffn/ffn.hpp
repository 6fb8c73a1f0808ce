// ffn.cpp — the feed-forward block of transformers. One include for the whole public API.
#pragma once

#include "ffn/accounting.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/config.hpp"
#include "ffn/error.hpp"
#include "ffn/gguf.hpp"
#include "ffn/isa.hpp"
#include "ffn/mapped_file.hpp"
#include "ffn/npy.hpp"
#include "ffn/presets.hpp"
#include "ffn/quant.hpp"
#include "ffn/safetensors.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"
#include "ffn/version.hpp"
