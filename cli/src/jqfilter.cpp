#include "jqfilter.hpp"

#ifdef QSCTL_HAVE_JQ

#include <cstdio>

// jq's headers have no C++ guards.
extern "C" {
#include <jq.h>
}

namespace qsctl {

namespace {

// A jv that is freed when it goes out of scope (libjq's values are reference counted, and
// every function consumes its arguments).
class Jv {
public:
	explicit Jv(jv value) : v_(value) {}
	~Jv() { jv_free(v_); }
	Jv(const Jv&) = delete;
	Jv& operator=(const Jv&) = delete;
	[[nodiscard]] jv get() const { return v_; }
	[[nodiscard]] jv copy() const { return jv_copy(v_); }
	[[nodiscard]] jv_kind kind() const { return jv_get_kind(v_); }

private:
	jv v_;
};

std::string text(const Jv& string) {
	return {jv_string_value(string.get()), size_t(jv_string_length_bytes(string.copy()))};
}

// A value as jq prints it with -c.
std::string dump(const Jv& value) { return text(Jv(jv_dump_string(value.copy(), 0))); }

// A message jq reports: a string as it is, anything else as JSON.
std::string message(const Jv& msg) {
	if (msg.kind() == JV_KIND_STRING) return text(msg);
	return dump(msg) + " (not a string)";
}

void trimNewlines(std::string& s) {
	while (!s.empty() && s.back() == '\n') s.pop_back();
}

} // namespace

struct JqFilter::State {
	jq_state* jq = nullptr;
	std::vector<std::string> compileErrors;
	~State() {
		if (jq) jq_teardown(&jq);
	}
};

bool JqFilter::available() { return true; }

JqFilter::JqFilter(std::unique_ptr<State> state) : state_(std::move(state)) {}
JqFilter::~JqFilter() = default;

std::unique_ptr<JqFilter> JqFilter::compile(const std::string& program, std::string& error) {
	auto state = std::make_unique<State>();
	state->jq = jq_init();
	if (!state->jq) {
		error = "jq: out of memory";
		return nullptr;
	}
	jq_set_error_cb(
	    state->jq,
	    [](void* data, jv msg) {
		    auto* s = static_cast<State*>(data);
		    auto line = message(Jv(msg));
		    trimNewlines(line);
		    s->compileErrors.push_back(std::move(line));
	    },
	    state.get());
	// `debug` prints what jq prints.
	jq_set_debug_cb(
	    state->jq,
	    [](void*, jv value) {
		    Jv v(value);
		    auto line = "[\"DEBUG:\"," + dump(v) + "]\n";
		    std::fwrite(line.data(), 1, line.size(), stderr);
	    },
	    nullptr);
	// Each run has exactly one input: `input` and `inputs` find no other (libjq 1.6 crashes on
	// them without a callback).
	jq_set_input_cb(
	    state->jq, [](jq_state*, void*) { return jv_invalid(); }, nullptr);
	// `import` and `include` find modules where jq looks first.
	jq_set_attr(state->jq, jv_string("JQ_LIBRARY_PATH"), jv_array_append(jv_array(), jv_string("~/.jq")));
	if (!jq_compile(state->jq, program.c_str())) {
		error.clear();
		for (const auto& e: state->compileErrors) error += (error.empty() ? "" : "\n") + e;
		if (error.empty()) error = "jq: the filter does not compile";
		return nullptr;
	}
	state->compileErrors.clear();
	return std::unique_ptr<JqFilter>(new JqFilter(std::move(state)));
}

JqFilter::Result JqFilter::run(const json& input, bool raw, size_t maxOutputs) {
	Result r;
	auto* jq = state_->jq;
	auto text_ = input.dump(-1, ' ', false, json::error_handler_t::replace);
	Jv parsed(jv_parse_sized(text_.data(), int(text_.size())));
	if (!jv_is_valid(parsed.get())) {
		// Never for what the daemon sends (JSON it produced); said rather than dropped.
		r.errors.push_back("jq: cannot read the value: " + message(Jv(jv_invalid_get_msg(parsed.copy()))));
		return r;
	}
	jq_start(jq, parsed.copy(), 0);
	size_t bytes = 0;
	for (;;) {
		Jv out(jq_next(jq));
		if (!jv_is_valid(out.get())) {
			if (jq_halted(jq)) {
				// halt_error's message, printed by jq as it is; plain halt has none.
				Jv msg(jq_get_error_message(jq));
				if (msg.kind() == JV_KIND_STRING) {
					auto m = text(msg);
					trimNewlines(m);
					r.errors.push_back(std::move(m));
				} else if (msg.kind() != JV_KIND_NULL && msg.kind() != JV_KIND_INVALID) {
					r.errors.push_back(dump(msg));
				}
			} else if (jv_invalid_has_msg(out.copy())) {
				r.errors.push_back("jq: error: " + message(Jv(jv_invalid_get_msg(out.copy()))));
			}
			break;
		}
		if (raw && out.kind() == JV_KIND_STRING) r.outputs.push_back(text(out));
		else r.outputs.push_back(dump(out));
		bytes += r.outputs.back().size() + 1;
		if (r.outputs.size() >= maxOutputs) break;   // the next jq_start resets the run
		if (bytes > kMaxOutputBytes) {
			r.errors.push_back("jq: the filter's outputs for one value passed " + std::to_string(kMaxOutputBytes >> 20) +
			                   " MiB: the rest are left out");
			break;
		}
	}
	return r;
}

} // namespace qsctl

#else // no libjq in this build

namespace qsctl {

struct JqFilter::State {};

bool JqFilter::available() { return false; }
JqFilter::JqFilter(std::unique_ptr<State> state) : state_(std::move(state)) {}
JqFilter::~JqFilter() = default;

std::unique_ptr<JqFilter> JqFilter::compile(const std::string&, std::string& error) {
	error = "this qsctl was built without libjq (-DQSCTL_JQ=OFF)";
	return nullptr;
}

JqFilter::Result JqFilter::run(const json&, bool, size_t) { return {}; }

} // namespace qsctl

#endif
