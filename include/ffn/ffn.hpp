// ffn.cpp — the feed-forward block of transformers. One include for the whole public API.
#pragma once

#include "ffn/accounting.hpp"
#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/config.hpp"
#include "ffn/error.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/isa.hpp"
#include "ffn/moe.hpp"
#include "ffn/moe_train.hpp"
#include "ffn/presets.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"
#include "ffn/version.hpp"
#include "ffn/weight_type.hpp"
