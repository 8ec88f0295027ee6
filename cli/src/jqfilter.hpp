#pragma once
// `qsctl watch --jq FILTER`: a jq program run by libjq (the library of jq itself, so filters
// behave as they do in `jq`), compiled once and run on each new value.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qsctl {

using json = nlohmann::json;

class JqFilter {
public:
	// Whether this build has libjq (QSCTL_JQ).
	[[nodiscard]] static bool available();

	// Compiles `program`; nullptr and `error` (jq's own messages, one per line) when it does
	// not compile or this build has no libjq.
	[[nodiscard]] static std::unique_ptr<JqFilter> compile(const std::string& program, std::string& error);
	~JqFilter();
	JqFilter(const JqFilter&) = delete;
	JqFilter& operator=(const JqFilter&) = delete;

	struct Result {
		// Each output as one line without its newline: compact JSON, as `jq -c` prints it, or
		// with `raw` a string's text as it is (`jq -r`).
		std::vector<std::string> outputs;
		// What ended the run early: a runtime error ("null (null) cannot be parsed…") or the
		// message of halt_error; the outputs before it are kept.
		std::vector<std::string> errors;
	};
	// At most `maxOutputs` outputs (--count's remaining lines), and outputs of at most
	// kMaxOutputBytes together: the run stops there (an endless filter, `repeat(.)`, grew until
	// the process died, printing nothing, since a run's outputs are compared whole with the last).
	static constexpr size_t kMaxOutputBytes = size_t(64) << 20;
	[[nodiscard]] Result run(const json& input, bool raw, size_t maxOutputs = SIZE_MAX);

private:
	struct State;
	explicit JqFilter(std::unique_ptr<State> state);
	std::unique_ptr<State> state_;
};

} // namespace qsctl
