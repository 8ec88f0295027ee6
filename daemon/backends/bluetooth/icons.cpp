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
	uint64_t version = 0;
};

IconLookup::IconLookup(): impl_(std::make_unique<Impl>()) {}

std::optional<std::string> IconLookup::url(const std::string& name) {
	// A name only: the lookup would take an absolute path as a file.
	if (name.empty() || name.find('/') != std::string::npos) return std::nullopt;
	auto file = impl_->theme.lookup(name);
	if (file.empty()) return std::nullopt;
	return tray::fileUrl(file);
}

int IconLookup::watchFd() const { return impl_->theme.watchFd(); }

bool IconLookup::readEvents() {
	if (!impl_->theme.readEvents()) return false;
	++impl_->version;
	return true;
}

uint64_t IconLookup::version() const { return impl_->version; }
#else
struct IconLookup::Impl {};

IconLookup::IconLookup() = default;

std::optional<std::string> IconLookup::url(const std::string&) { return std::nullopt; }
int IconLookup::watchFd() const { return -1; }
bool IconLookup::readEvents() { return false; }
uint64_t IconLookup::version() const { return 0; }
#endif

IconLookup::~IconLookup() = default;

} // namespace qsd::bluetooth
