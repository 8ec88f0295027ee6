// The media.* methods. Each is checked against what the player says it allows (its Can*
// properties, the properties it has), sent to the player's unique name with a timeout, and
// answered once the player answered.

#include "mpris_backend.hpp"

#include "../answer.hpp"

#include <fmt/format.h>

namespace qsd::mpris {

using json = nlohmann::json;
using rpc::ErrorCode;
using rpc::RpcException;

std::span<const Backend::Method> MprisBackend::methods() const {
	static constexpr Method table[] = {
	    method<&MprisBackend::play>("media.play"),
	    method<&MprisBackend::pause>("media.pause"),
	    method<&MprisBackend::playPause>("media.playPause"),
	    method<&MprisBackend::stopPlayback>("media.stop"),
	    method<&MprisBackend::next>("media.next"),
	    method<&MprisBackend::previous>("media.previous"),
	    method<&MprisBackend::raise>("media.raise"),
	    method<&MprisBackend::quit>("media.quit"),
	    method<&MprisBackend::openUri>("media.openUri"),
	    method<&MprisBackend::seek>("media.seek"),
	    method<&MprisBackend::setPosition>("media.setPosition"),
	    method<&MprisBackend::setVolume>("media.setVolume"),
	    method<&MprisBackend::setLoopStatus>("media.setLoopStatus"),
	    method<&MprisBackend::setShuffle>("media.setShuffle"),
	    method<&MprisBackend::setFullscreen>("media.setFullscreen"),
	    method<&MprisBackend::setRate>("media.setRate"),
	    method<&MprisBackend::setActive>("media.setActive"),
	};
	return table;
}

namespace {

[[noreturn]] void refuse(const std::string& key, const std::string& message, const char* capability) {
	json data = {{"backend", "mpris"},
	             {"player", key},
	             {"name", "org.freedesktop.DBus.Error.NotSupported"},
	             {"message", message}};
	if (capability) data["capability"] = capability;
	throw RpcException(ErrorCode::BackendFailed, message, std::move(data));
}

} // namespace

MprisBackend::Player& MprisBackend::actionPlayer(Call& c) {
	auto key = c.params().string("player");
	auto* p = find(key);
	if (!p || !p->published)
		throw RpcException(ErrorCode::NotFound, "No media player " + key, {{"param", "player"}, {"player", key}});
	if (p->actions >= kMaxActionsInFlight) {
		auto message = fmt::format("{} has {} calls that it has not answered yet", key, p->actions);
		throw RpcException(ErrorCode::BackendFailed, message,
		                   {{"backend", "mpris"},
		                    {"player", key},
		                    {"name", "org.freedesktop.DBus.Error.LimitsExceeded"},
		                    {"message", message}});
	}
	return *p;
}

void MprisBackend::require(Player& p, const char* capability, const char* verb) {
	if (p.state.value(capability, false) != true)
		refuse(p.key, fmt::format("{} does not allow {} ({} is false)", p.key, verb, capability), capability);
}

template <typename... Args>
void MprisBackend::invoke(Call& c, Player& p, const char* iface, const char* member, bool rereadPosition, const Args&... args) {
	auto invoker = p.proxy->callMethodAsync(member).onInterface(iface);
	if constexpr (sizeof...(Args) > 0) invoker.withArguments(args...);
	invoker.withTimeout(kCallTimeout);
	++p.actions;
	calls_.start(group(p.key), invoker,
	             [this, answer = c.answer(p.name), key = p.key, serial = p.serial, rereadPosition](const sdbus::Error* e) {
		             auto* q = find(key, serial);
		             if (q) --q->actions;
		             if (e) answer->failed(*e);
		             else answer->result({{"player", key}});
		             // Not every player sends Seeked, nor anything when previous() restarts the same
		             // track: what it says now is read once.
		             if (q && !e && rereadPosition) readPosition(*q);
	             });
}

void MprisBackend::setProperty(Call& c, Player& p, const char* property, sdbus::Variant value, const char* iface) {
	invoke(c, p, dbus::kPropertiesIface, "Set", false, std::string(iface), std::string(property), value);
}

void MprisBackend::play(Call& c) {
	auto& p = actionPlayer(c);
	require(p, "canPlay", "play");
	invoke(c, p, kPlayerIface, "Play", false);
}

void MprisBackend::pause(Call& c) {
	auto& p = actionPlayer(c);
	require(p, "canPause", "pause");
	invoke(c, p, kPlayerIface, "Pause", false);
}

void MprisBackend::playPause(Call& c) {
	auto& p = actionPlayer(c);
	// The specification ties PlayPause to CanPause.
	require(p, "canPause", "playPause");
	invoke(c, p, kPlayerIface, "PlayPause", false);
}

void MprisBackend::stopPlayback(Call& c) {
	auto& p = actionPlayer(c);
	require(p, "canControl", "stop");
	invoke(c, p, kPlayerIface, "Stop", false);
}

void MprisBackend::next(Call& c) {
	auto& p = actionPlayer(c);
	require(p, "canGoNext", "next");
	invoke(c, p, kPlayerIface, "Next", true);
}

void MprisBackend::previous(Call& c) {
	auto& p = actionPlayer(c);
	require(p, "canGoPrevious", "previous");
	invoke(c, p, kPlayerIface, "Previous", true);
}

void MprisBackend::raise(Call& c) {
	auto& p = actionPlayer(c);
	require(p, "canRaise", "raise");
	invoke(c, p, kRootIface, "Raise", false);
}

void MprisBackend::quit(Call& c) {
	auto& p = actionPlayer(c);
	require(p, "canQuit", "quit");
	invoke(c, p, kRootIface, "Quit", false);
}

void MprisBackend::openUri(Call& c) {
	auto& p = actionPlayer(c);
	auto uri = c.params().string("uri");   // at most kMaxUrl bytes (media.json)
	if (!hasUriScheme(uri))
		throw RpcException(ErrorCode::InvalidParams, "Invalid params: 'uri' must start with a scheme (\"file:\", \"https:\")",
		                   {{"param", "uri"}, {"expected", "a URI with a scheme"}});
	// Not checked against supportedUriSchemes: players leave out schemes they open (mpv-mpris
	// lists eight network schemes and opens file:// URIs).
	invoke(c, p, kPlayerIface, "OpenUri", true, uri);
}

void MprisBackend::seek(Call& c) {
	auto& p = actionPlayer(c);
	double offset = c.params().number("offset");
	require(p, "canSeek", "seek");
	invoke(c, p, kPlayerIface, "Seek", true, microseconds(offset));
}

void MprisBackend::setPosition(Call& c) {
	auto& p = actionPlayer(c);
	double position = c.params().number("position");
	require(p, "canSeek", "setPosition");
	// SetPosition names the track it is meant for, so a change of track in between is harmless.
	if (!p.meta.trackId || *p.meta.trackId == "/org/mpris/MediaPlayer2/TrackList/NoTrack")
		refuse(p.key, p.key + " gives no track id (mpris:trackid), which SetPosition needs", nullptr);
	invoke(c, p, kPlayerIface, "SetPosition", true, sdbus::ObjectPath(*p.meta.trackId), microseconds(position));
}

void MprisBackend::setVolume(Call& c) {
	auto& p = actionPlayer(c);
	double volume = c.params().number("volume");
	require(p, "canControl", "setVolume");
	if (p.state.value("volume", json()).is_null()) refuse(p.key, p.key + " has no volume", "volume");
	setProperty(c, p, "Volume", sdbus::Variant(volume));
}

void MprisBackend::setLoopStatus(Call& c) {
	auto& p = actionPlayer(c);
	auto loop = wireLoopStatus(c.params().string("loopStatus"));
	require(p, "canControl", "setLoopStatus");
	if (p.state.value("loopStatus", json()).is_null()) refuse(p.key, p.key + " has no loop status", "loopStatus");
	setProperty(c, p, "LoopStatus", sdbus::Variant(loop.value_or("None")));
}

void MprisBackend::setShuffle(Call& c) {
	auto& p = actionPlayer(c);
	bool shuffle = c.params().boolean("shuffle");
	require(p, "canControl", "setShuffle");
	if (p.state.value("shuffle", json()).is_null()) refuse(p.key, p.key + " has no shuffle", "shuffle");
	setProperty(c, p, "Shuffle", sdbus::Variant(shuffle));
}

void MprisBackend::setFullscreen(Call& c) {
	auto& p = actionPlayer(c);
	bool fullscreen = c.params().boolean("fullscreen");
	require(p, "canSetFullscreen", "setFullscreen");
	setProperty(c, p, "Fullscreen", sdbus::Variant(fullscreen), kRootIface);
}

void MprisBackend::setRate(Call& c) {
	auto& p = actionPlayer(c);
	double rate = c.params().number("rate");
	require(p, "canControl", "setRate");
	if (!p.player.find("Rate")) refuse(p.key, p.key + " has no rate", "rate");
	auto min = p.state.value("minRate", json());
	auto max = p.state.value("maxRate", json());
	if ((min.is_number() && rate < min.get<double>()) || (max.is_number() && rate > max.get<double>())) {
		auto expected = fmt::format("between {} and {}", min.is_number() ? min.dump() : "0", max.is_number() ? max.dump() : "any");
		throw RpcException(ErrorCode::InvalidParams, "Invalid params: 'rate' must be " + expected,
		                   {{"param", "rate"}, {"expected", expected}, {"minimum", min}, {"maximum", max}});
	}
	setProperty(c, p, "Rate", sdbus::Variant(rate));
}

void MprisBackend::setActive(Call& c) {
	const auto& value = c.params().any("player");
	if (value.is_null()) {
		pinned_.reset();
	} else {
		auto key = value.get<std::string>();
		auto* p = find(key);
		if (!p || !p->published)
			throw RpcException(ErrorCode::NotFound, "No media player " + key, {{"param", "player"}, {"player", key}});
		pinned_ = key;
	}
	context_.tree.set("/media/pinned", pinned_ ? json(*pinned_) : json(nullptr));
	saveSoon();
	updateActive();
	const json* active = context_.tree.find("/media/active");
	c.result({{"active", active ? *active : json(nullptr)}, {"pinned", pinned_ ? json(*pinned_) : json(nullptr)}});
}

} // namespace qsd::mpris
