import QtQuick
import QtTest
import Qsd

// QsdMediaPosition against qsd's mpris backend and a player on the session bus
// (run_services.py: "Blue in Green", playing from 1:10 of 5:37). The position ticks locally
// while the player plays and the element is enabled — /media in the mirror does not change, so
// no daemon traffic is involved — agrees with the player, stops with it and when disabled.
TestCase {
    id: test
    name: "Media"

    QsdMediaPosition { id: position; player: Qsd.media?.active ?? ""; interval: 50 }
    QsdMediaPosition { id: nobody; player: "" }
    QsdMediaPosition { id: still; player: "barplayer"; enabled: false }

    property string unsupported: ""

    function initTestCase() {
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 30000, "connected")
        var doc = QsdDaemon.rpc("rpc.discover").result
        var methods = doc ? doc.methods.map(function(m) { return m.name }) : []
        if (methods.indexOf("media.play") < 0) {
            unsupported = "this qsd has no media.* (the build has no mpris backend)"
            console.log("Media: skipped: " + unsupported)
            return
        }
        tryVerify(function() { return (Qsd.media?.active ?? "") === "barplayer" }, 30000, "the player in /media")
    }

    function init() {
        if (unsupported !== "") skip(unsupported)
    }

    function test_1_ticksLocallyWhilePlaying() {
        tryVerify(function() { return position.playing && position.known && position.ticking }, 10000)
        compare(position.length, 337)
        verify(position.position >= 70 && position.position < 337, position.position)
        var before = JSON.stringify(Qsd.value("/media"))
        var start = position.position
        tryVerify(function() { return position.position > start + 0.5 }, 5000, "the position moves")
        compare(JSON.stringify(Qsd.value("/media")), before, "no change of /media came from the daemon meanwhile")
        // What the player itself says, through the daemon's pair: the same, give or take a tick.
        var p = QsdDaemon.rpc("tree.get", { path: "/media/players/barplayer" }).result.value
        var now = p.position + (Date.now() - Date.parse(p.positionAt)) / 1000 * p.rate
        verify(Math.abs(now - position.position) < 0.25, now + " vs " + position.position)
    }

    function test_2_stopsWhenDisabled() {
        position.enabled = false
        verify(!position.ticking)
        var held = position.position
        wait(200)
        compare(position.position, held)
        position.enabled = true
        verify(position.ticking)
        tryVerify(function() { return position.position > held + 0.1 }, 5000)
    }

    // Not ticking, the position is still "now" as of its last computation: it was the tree's
    // position as of positionAt, however long ago that was.
    function test_2b_notTickingStillNow() {
        tryVerify(function() { return still.playing && still.known }, 10000)
        var p = QsdDaemon.rpc("tree.get", { path: "/media/players/barplayer" }).result.value
        verify(Date.now() - Date.parse(p.positionAt) > 500, "the pair is older than the tolerance")
        still.enabled = true
        still.enabled = false
        var now = p.position + (Date.now() - Date.parse(p.positionAt)) / 1000 * p.rate
        verify(!still.ticking)
        verify(Math.abs(now - still.position) < 0.25, now + " vs " + still.position)
    }

    function test_3_stopsWithThePlayer() {
        var done = false
        Qsd.call("media.pause", { player: "barplayer" }, function(error, result) { done = error === null })
        tryVerify(function() { return done }, 10000, "media.pause answered")
        tryVerify(function() { return !position.playing && !position.ticking }, 10000)
        // Paused, the element shows the daemon's position as it is and does not move on its own.
        // (The daemon itself may correct that position once, 100 ms after the pause, when the
        // player's own reading differs from its estimate by more than 10 ms.)
        wait(200)
        compare(position.position, Qsd.value("/media/players/barplayer/position"))
        var held = position.position
        Qsd.call("media.play", { player: "barplayer" })
        tryVerify(function() { return position.playing && position.ticking }, 10000)
        tryVerify(function() { return position.position > held + 0.1 }, 5000)
    }

    function test_4_withoutAPlayer() {
        compare(nobody.known, false)
        compare(nobody.position, 0)
        compare(nobody.ticking, false)
    }
}
