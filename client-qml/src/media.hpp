#pragma once
// The position of a media player, ticking locally. qsd publishes a player's position as a pair
// (position, positionAt) that a client extrapolates while it plays, and sends nothing while the
// position merely moves (docs/backends/mpris.md, "Position"); this element does the arithmetic
// with a timer that runs only while it is enabled and the player plays: no daemon traffic.

#include <qobject.h>
#include <qqmlintegration.h>
#include <qqmlparserstatus.h>
#include <qpointer.h>
#include <qtimer.h>

#include "client.hpp"

#include <string>

namespace qsd::qml {

// QsdMediaPosition { player: Qsd.media?.active ?? ""; interval: 500 }
class QsdMediaPosition: public QObject, public QQmlParserStatus, public PathWatcher {
	Q_OBJECT
	QML_ELEMENT
	Q_INTERFACES(QQmlParserStatus)
	/// The player: a key of /media/players ("mpv"), e.g. Qsd.media.active.
	Q_PROPERTY(QString player READ player WRITE setPlayer NOTIFY playerChanged)
	/// How often position is recomputed while the player plays, in ms. Default 1000.
	Q_PROPERTY(int interval READ interval WRITE setInterval NOTIFY intervalChanged)
	/// Whether it ticks (e.g. only while a popup is open). Default true. While false, position is
	/// still right whenever the tree changes, it just does not move on its own.
	Q_PROPERTY(bool enabled READ enabled WRITE setEnabled NOTIFY enabledChanged)
	/// Seconds into the track now: position + (now - positionAt) x rate while playing, at most
	/// length. 0 while the player or its position is unknown.
	Q_PROPERTY(double position READ position NOTIFY positionChanged)
	/// The track's length in seconds; 0 when unknown.
	Q_PROPERTY(double length READ length NOTIFY lengthChanged)
	/// Whether the player gives a position at all (its `position` is not null).
	Q_PROPERTY(bool known READ known NOTIFY knownChanged)
	/// Whether the player plays (and the timer may run).
	Q_PROPERTY(bool playing READ playing NOTIFY playingChanged)
	/// Whether the timer runs now: enabled and playing.
	Q_PROPERTY(bool ticking READ ticking NOTIFY tickingChanged)

public:
	explicit QsdMediaPosition(QObject* parent = nullptr);
	~QsdMediaPosition() override;

	[[nodiscard]] QString player() const { return this->mPlayer; }
	void setPlayer(const QString& player);
	[[nodiscard]] int interval() const { return this->mTimer.interval(); }
	void setInterval(int ms);
	[[nodiscard]] bool enabled() const { return this->mEnabled; }
	void setEnabled(bool enabled);
	[[nodiscard]] double position() const { return this->mPosition; }
	[[nodiscard]] double length() const { return this->mLength; }
	[[nodiscard]] bool known() const { return this->mKnown; }
	[[nodiscard]] bool playing() const { return this->mPlaying; }
	[[nodiscard]] bool ticking() const { return this->mTimer.isActive(); }

	void classBegin() override {}
	void componentComplete() override;
	[[nodiscard]] std::string watchedPath() const override;
	void watchedChanged() override { this->read(); }

signals:
	void playerChanged();
	void intervalChanged();
	void enabledChanged();
	void positionChanged();
	void lengthChanged();
	void knownChanged();
	void playingChanged();
	void tickingChanged();

private:
	void read();       // the pair from the tree
	void update();     // position now
	void schedule();   // the timer on or off

	QPointer<QsdClient> mClient;
	QTimer mTimer;
	QString mPlayer;
	bool mEnabled = true;
	bool mComplete = false;
	double mBase = 0;        // position at mBaseAtMs
	qint64 mBaseAtMs = 0;    // positionAt, ms since the epoch
	double mRate = 1;
	double mPosition = 0;
	double mLength = 0;
	bool mKnown = false;
	bool mPlaying = false;
};

} // namespace qsd::qml
