#include "icons.hpp"

#ifdef QSD_TRAY_BACKEND
#include "../tray/icon_theme.hpp"
#include "../tray/mapping.hpp"
#endif

namespace qsd::bluetooth {

#ifdef QSD_TRAY_BACKEND
namespace {
// Device icons are drawn in lists and chips: the theme's 32 px variant, or the nearest.
constexpr int kIconSize = 32;
} // namespace

struct IconLookup::Impl {
	tray::IconTheme theme{tray::IconTheme::fromEnvironment(kIconSize)};
};

IconLookup::IconLookup(): impl_(std::make_unique<Impl>()) {}

std::optional<std::string> IconLookup::url(const std::string& name) {
	// A name only: the lookup would take an absolute path as a file.
	if (name.empty() || name.find('/') != std::string::npos) return std::nullopt;
	auto file = impl_->theme.lookup(name);
	if (file.empty()) return std::nullopt;
	return tray::fileUrl(file);
}
#else
struct IconLookup::Impl {};

IconLookup::IconLookup() = default;

std::optional<std::string> IconLookup::url(const std::string&) { return std::nullopt; }
#endif

IconLookup::~IconLookup() = default;

} // namespace qsd::bluetooth
