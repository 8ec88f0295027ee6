#pragma once
// Declarative elements over the Qsd singleton: QsdEvents (event topics with a handler) and
// QsdNode { path } (a node at a path that may not exist yet, as a binding source).

#include <qobject.h>
#include <qpointer.h>
#include <qqmlintegration.h>
#include <qqmlparserstatus.h>
#include <qstringlist.h>
#include <qvariant.h>

#include "client.hpp"

namespace qsd::qml {

// QsdEvents { topics: ["network.connectionFailed"]; onEvent: (topic, data) => … }
class QsdEvents: public QObject, public QQmlParserStatus {
	Q_OBJECT
	QML_ELEMENT
	Q_INTERFACES(QQmlParserStatus)
	/// Topic names or patterns: an exact name, "domain.*" (every topic of a domain) or "*".
	Q_PROPERTY(QStringList topics READ topics WRITE setTopics NOTIFY topicsChanged)
	/// While false, the element receives nothing (and asks the daemon for nothing). Default true.
	Q_PROPERTY(bool enabled READ isEnabled WRITE setEnabled NOTIFY enabledChanged)

public:
	explicit QsdEvents(QObject* parent = nullptr): QObject(parent) {}
	// The `event` signal is a name QML users expect; QObject::event(QEvent*) stays visible.
	using QObject::event;
	~QsdEvents() override;

	[[nodiscard]] QStringList topics() const { return this->mTopics; }
	void setTopics(const QStringList& topics);
	[[nodiscard]] bool isEnabled() const { return this->mEnabled; }
	void setEnabled(bool enabled);
	// Whether a topic matches one of this element's topics.
	[[nodiscard]] bool matches(const QString& topic) const;

	void classBegin() override {}
	void componentComplete() override;

signals:
	/// An event of one of the topics: its data as the daemon sent it (an object for every topic
	/// the daemon documents).
	void event(const QString& topic, const QVariant& data);
	void topicsChanged();
	void enabledChanged();

private:
	QPointer<QsdClient> mClient;
	QStringList mTopics;
	bool mEnabled = true;
};

// QsdNode { id: battery; path: "/power/devices/battery_BAT0" } — battery.node follows the path:
// null while nothing is there, the node once it exists, null again when it goes.
class QsdNodeRef: public QObject, public QQmlParserStatus, public PathWatcher {
	Q_OBJECT
	QML_NAMED_ELEMENT(QsdNode)
	Q_INTERFACES(QQmlParserStatus)
	/// A JSON Pointer, e.g. "/network/devices/wlan0".
	Q_PROPERTY(QString path READ path WRITE setPath NOTIFY pathChanged)
	/// The node of the object at the path, or null (absent, or a leaf). Typed `var`, as the
	/// tree's nodes are everywhere (their properties are the daemon's keys).
	Q_PROPERTY(QVariant node READ node NOTIFY nodeChanged)
	/// A copy of the value at the path (a leaf's value, or an object as a JS object), or
	/// undefined. Notifies whenever something at or under the path changes.
	Q_PROPERTY(QVariant value READ value NOTIFY valueChanged)
	/// Whether anything is at the path.
	Q_PROPERTY(bool exists READ exists NOTIFY existsChanged)

public:
	explicit QsdNodeRef(QObject* parent = nullptr): QObject(parent) {}
	~QsdNodeRef() override;

	[[nodiscard]] QString path() const { return this->mPath; }
	void setPath(const QString& path);
	[[nodiscard]] QVariant node() const { return QVariant::fromValue<QObject*>(this->mNode); }
	[[nodiscard]] QVariant value() const;
	[[nodiscard]] bool exists() const { return this->mExists; }

	void classBegin() override {}
	void componentComplete() override;

	[[nodiscard]] std::string watchedPath() const override { return this->mPath.toStdString(); }
	void watchedChanged() override { this->refresh(true); }

signals:
	void pathChanged();
	void nodeChanged();
	void valueChanged();
	void existsChanged();

private:
	void refresh(bool valueTouched);

	QPointer<QsdClient> mClient;
	QString mPath;
	QPointer<QsdNode> mNode;
	bool mExists = false;
};

} // namespace qsd::qml
