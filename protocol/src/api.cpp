#include "qsd/protocol/api.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace qsd::api {

using json = nlohmann::json;

namespace {

const detail::CheckingText* find(std::string_view name) {
	auto texts = detail::checkingTexts();
	auto it = std::lower_bound(texts.begin(), texts.end(), name,
	                           [](const detail::CheckingText& t, std::string_view n) { return t.name < n; });
	return it != texts.end() && it->name == name ? &*it : nullptr;
}

// The descriptions parsed so far, by name; a map, so that the pointers method() returns stay
// valid as more are added.
std::map<std::string, json, std::less<>>& parsed() {
	static std::map<std::string, json, std::less<>> descriptions;
	return descriptions;
}

} // namespace

bool hasMethod(std::string_view name) { return find(name) != nullptr; }

const json* method(std::string_view name) {
	auto& descriptions = parsed();
	if (auto it = descriptions.find(name); it != descriptions.end()) return &it->second;
	const auto* text = find(name);
	if (!text) return nullptr;
	return &descriptions.emplace(std::string(name), json::parse(text->text)).first->second;
}

size_t detail::parsedMethods() { return parsed().size(); }

} // namespace qsd::api
