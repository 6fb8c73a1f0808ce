// ffn types: the weight-type table — what each type stores, and what its forward runs on
// every ISA this CPU supports.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.hpp"
#include "ffn/isa.hpp"
#include "ffn/weight_type.hpp"
#include "format.hpp"

namespace ffn::cli {
namespace {

void run_types(bool json) {
  const std::vector<Isa> isas = supported_isas();
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& t : weight_types()) {
      nlohmann::json kernels = nlohmann::json::object();
      for (Isa isa : isas) {
        const WeightTypeKernel k = weight_type_kernel(t.type, isa);
        kernels[std::string(isa_name(isa))] = {{"kernel", std::string(k.kernel)},
                                               {"arithmetic", std::string(k.arithmetic)},
                                               {"activations", std::string(weight_type_name(k.activations))}};
      }
      out.push_back({{"name", std::string(t.name)},
                     {"gguf_type", t.gguf_type},
                     {"block_elements", t.block_elements},
                     {"block_bytes", t.block_bytes},
                     {"bits_per_weight", t.bits_per_weight()},
                     {"layout", std::string(t.summary)},
                     {"kernels", kernels}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("%-6s %5s %7s %6s %6s  %s\n", "type", "GGUF", "block", "bytes", "bits", "layout");
  for (const auto& t : weight_types())
    std::printf("%-6s %5u %7lld %6lld %6s  %s\n", std::string(t.name).c_str(), t.gguf_type,
                static_cast<long long>(t.block_elements), static_cast<long long>(t.block_bytes),
                fixed(t.bits_per_weight(), 2).c_str(), std::string(t.summary).c_str());
  std::printf("\nforward kernels (the activations each takes), on the ISAs this CPU supports (active: %s):\n",
              std::string(isa_name(active_isa())).c_str());
  for (const auto& t : weight_types()) {
    std::printf("%s\n", std::string(t.name).c_str());
    for (Isa isa : isas) {
      const WeightTypeKernel k = weight_type_kernel(t.type, isa);
      std::printf("  %-12s %s: %s on %s activations\n", std::string(isa_name(isa)).c_str(),
                  std::string(k.kernel).c_str(), std::string(k.arithmetic).c_str(),
                  std::string(weight_type_name(k.activations)).c_str());
    }
  }
}

}  // namespace

void add_types_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("types", "The weight types: storage, GGUF number, and the kernels each runs");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print the table as JSON");
  cmd->footer("Every type is one entry of the library's list of types (include/ffn/weight_type_list.hpp).");
  cmd->callback([json] { run_types(*json); });
}

}  // namespace ffn::cli
