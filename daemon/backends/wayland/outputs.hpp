#pragma once
// /wayland/outputs: wl_output (v4 name), xdg-output (logical position and size) and, when the
// compositor offers it, wlr-output-management (heads: modes, fractional scale, serial, disabled
// outputs) merged by output name; and wayland.configureOutput.
//
// Every protocol here is double-buffered (wl_output.done, zwlr_output_manager_v1.done), so
// events are stored as they come and the tree is written only at those points: an output
// never shows half of a change. A new output appears once the compositor answered a
// wl_display.sync sent after binding it, i.e. with its xdg-output information too.

#include "display.hpp"
#include "mapping.hpp"

#include "../../server/dispatcher.hpp"
#include "../../tree.hpp"

#include "wlr-output-management-unstable-v1-client-protocol.h"
#include "xdg-output-unstable-v1-client-protocol.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qsd::wayland {

class Outputs {
public:
	// onNamesChanged: an output was published, renamed or removed (toplevels list outputs by
	// name). onRemoved: a wl_output is about to be destroyed (its address may be reused).
	Outputs(Tree& tree, Display& display, std::function<void()> onNamesChanged, std::function<void(wl_output*)> onRemoved);
	~Outputs();   // destroys every proxy (the display must still be connected) and fails pending configurations
	Outputs(const Outputs&) = delete;
	Outputs& operator=(const Outputs&) = delete;

	void addOutput(wl_registry* registry, uint32_t global, uint32_t version);
	// A global went away: true when it was one of our wl_outputs.
	bool removeGlobal(uint32_t global);
	void bindXdgManager(wl_registry* registry, uint32_t global, uint32_t version);
	void bindOutputManager(wl_registry* registry, uint32_t global, uint32_t version);

	// The initial enumeration is complete: publish, and from now on publish as things change.
	void setReady();

	// For toplevels: the published name of a wl_output ("" when unknown), and the reverse.
	[[nodiscard]] std::string nameOf(wl_output* output) const;
	[[nodiscard]] wl_output* find(const std::string& name) const;

	// wayland.configureOutput: one zwlr_output_configuration_v1 with every head (the protocol
	// wants them all); answered when the compositor says succeeded or failed. A cancelled
	// configuration (an output changed meanwhile) is tried again with the newer serial, twice.
	void configure(OutputConfig config, Responder responder);

private:
	struct Output;
	struct Head;
	struct ModeObject;
	struct Configuration;

	void refresh();
	void writeOutput(const std::string& name, const json& value);
	void destroyOutput(Output& o);
	void destroyHead(Head& h);
	void apply(Configuration& c);
	void finish(Configuration& c, int outcome);   // 0 succeeded, 1 failed, 2 cancelled
	[[nodiscard]] HeadInfo headInfo(const Head& h) const;
	Head* headNamed(const std::string& name) const;
	[[nodiscard]] bool enabled(const Head& h) const;

	static const wl_output_listener kOutputListener;
	static const zxdg_output_v1_listener kXdgListener;
	static const zwlr_output_manager_v1_listener kManagerListener;
	static const zwlr_output_head_v1_listener kHeadListener;
	static const zwlr_output_mode_v1_listener kModeListener;
	static const zwlr_output_configuration_v1_listener kConfigurationListener;

	Tree& tree_;
	Display& display_;
	std::function<void()> onNamesChanged_;
	std::function<void(wl_output*)> onRemoved_;
	bool ready_ = false;
	zxdg_output_manager_v1* xdgManager_ = nullptr;
	uint32_t xdgVersion_ = 0;
	zwlr_output_manager_v1* manager_ = nullptr;
	uint32_t serial_ = 0;
	uint64_t outputSerial_ = 0;   // the last Output's serial
	bool managerDone_ = false;
	bool settlingHeads_ = false;   // a sync for new heads is in flight
	std::vector<std::unique_ptr<Output>> outputs_;
	std::vector<std::unique_ptr<Head>> heads_;
	std::map<uint64_t, std::unique_ptr<Configuration>> configurations_;
	uint64_t nextConfiguration_ = 1;
	std::map<std::string, json> published_;
	std::map<wl_output*, std::string> names_;   // what toplevels were told
};

} // namespace qsd::wayland
