import QtQuick
import QtQuick.Window
import QtTest
import Qsd
import "../../examples/bar"

// /audio from a real qsd against a real PipeWire and WirePlumber (run_services.py: null sinks
// "Speakers" (default, 62 %) and "Headset", a null source, a stream playing a tone), through the
// example bar's own parts: the volume chip, and the sound menu's slider, mute button and output
// picker. What reaches PipeWire is checked with wpctl, as a user would look.
TestCase {
    id: test
    name: "Audio"
    when: windowShown

    // A stand-in for the bar window the menu hangs under.
    Window {
        id: bar
        width: 800
        height: 34
        visible: true
        VolumeChip { id: chip; x: 500 }
    }
    AudioMenu {
        id: menu
        bar: bar
        anchorItem: chip
    }

    // Numeric keys: the nodes are keyed by object.serial.
    readonly property var defaultSink: Qsd.audio?.nodes?.get(Qsd.audio?.defaultAudioSink ?? "") ?? null
    QsdNode { id: defaultRef; path: "/audio/nodes/" + (Qsd.audio?.defaultAudioSink ?? "") }

    function byName(name) {
        return (Qsd.audio?.nodes?.values ?? []).find(function(n) { return n.name === name }) ?? null
    }
    function keyOf(name) { return Qsd.keyOf(byName(name)) }
    function wpctl(name) {
        var r = QsdDaemon.drive("pw-volume", [name])
        compare(r.code, 0, "pw-volume: " + r.output)
        var parts = r.output.split(" ")
        return { volume: parseFloat(parts[0]), muted: parts[1] === "muted" }
    }
    function near(a, b) { return Math.abs(a - b) < 0.015 }
    // A shown item of the menu: by objectName, or a row by its text.
    function find(item, test) {
        if (!item || !item.visible) return null   // shown items only (not ones on their way out)
        if (test(item)) return item
        for (var i = 0; i < item.children.length; ++i) {
            var found = find(item.children[i], test)
            if (found) return found
        }
        return null
    }
    function named(name) { return find(menu.contentItem, function(i) { return i.objectName === name }) }
    function row(text) { return find(menu.contentItem, function(i) { return i.text === text && i.clicked !== undefined }) }

    // Clicks an item once the window is laid out around it (rows are positioned when the window
    // is next polished).
    function laidOut(item) {
        for (var i = item; i; i = i.parent)
            if (isPolishScheduled(i)) return false
        return true
    }
    function click(item, x, y) {
        verify(item !== null)
        tryVerify(function() { return laidOut(item) }, 10000, "laid out")
        if (x === undefined) mouseClick(item)
        else mouseClick(item, x, y)
    }

    SignalSpy { id: moved; signalName: "moved" }

    function initTestCase() {
        verify(QsdDaemon.start())
        tryVerify(function() { return Qsd.connected }, 30000, "connected")
        tryVerify(function() { return Qsd.audio?.available === true }, 30000, "/audio available")
        tryVerify(function() { return keyOf("bar_speakers") !== "" && keyOf("bar_headset") !== "" && keyOf("bar_music") !== "" },
                  30000, "the sinks and the stream")
        tryVerify(function() { return Qsd.audio.defaultAudioSink === keyOf("bar_speakers") }, 30000, "Speakers the default")
    }

    function test_1_numericKeys() {
        var key = Qsd.audio.defaultAudioSink
        verify(/^[0-9]+$/.test(key), "a serial: " + key)
        compare(Qsd.audio.nodes[key], undefined, "JavaScript reads a numeric key as an array index")
        verify(defaultSink !== null)
        compare(defaultSink.name, "bar_speakers")
        compare(defaultSink.type, QsdAudio.nodeType.audioSink)
        verify(defaultSink === Qsd.audio.nodes.get(Number(key)))
        verify(defaultRef.node === defaultSink, "QsdNode { path } with a numeric key")
        verify(Qsd.node("/audio/nodes/" + key) === defaultSink)
        compare(Qsd.keyOf(defaultSink), key)
        verify(Qsd.audio.nodes.keys().indexOf(key) >= 0)
        var model = Qsd.model("/audio/nodes")
        compare(model.count, Qsd.audio.nodes.count)
        verify(model.indexOf(key) >= 0)
        verify(model.data(model.index(model.indexOf(key), 0), Qt.UserRole + 2) === defaultSink, "the model's node role")
        compare(defaultSink.audio.channels, [QsdAudio.channel.frontLeft, QsdAudio.channel.frontRight])

        // The stream plays to the sink: a link keyed by its own serial, and the link groups.
        var stream = keyOf("bar_music")
        compare(byName("bar_music").type, QsdAudio.nodeType.audioOutStream)
        tryVerify(function() { return Qsd.audio.links.values.some(function(l) { return l.output === stream && l.input === key }) },
                  20000, "a link from the stream to the sink")
        var link = Qsd.audio.links.values.find(function(l) { return l.output === stream })
        var linkKey = Qsd.keyOf(link)
        verify(/^[0-9]+$/.test(linkKey))
        verify(Qsd.audio.links.get(linkKey) === link)
        compare(link.state, QsdAudio.linkState.active)
        verify(defaultSink.capturedFrom.indexOf(stream) >= 0)
        verify(Qsd.audio.nodes.get(stream).playingTo.indexOf(key) >= 0)
    }

    function test_2_theChipFollowsPipeWire() {
        verify(chip.visible)
        verify(near(chip.volume, 0.62), "62 %: " + chip.volume)
        compare(chip.muted, false)
        compare(QsdDaemon.drive("pw-set-volume", ["bar_speakers", "0.4"]).code, 0)
        tryVerify(function() { return near(chip.volume, 0.4) }, 15000, "the chip follows wpctl set-volume")
    }

    function test_3_theSliderSetsTheVolume() {
        menu.open = true
        tryVerify(function() { return menu.visible })
        var slider = named("volumeSlider")
        verify(slider !== null)
        tryVerify(function() { return near(slider.value, 0.4) }, 10000, "the slider shows the volume")
        moved.target = slider
        click(slider, slider.width * 0.25, slider.height / 2)
        compare(moved.count, 1)
        var asked = moved.signalArguments[0][0]
        verify(asked > 0.2 && asked < 0.3, "a quarter of the slider: " + asked)
        // audio.setVolume reached PipeWire: wpctl reads it, and the tree follows.
        tryVerify(function() { return near(wpctl("bar_speakers").volume, asked) }, 15000, "wpctl reads the new volume")
        tryVerify(function() { return near(defaultSink.audio.volume, asked) }, 15000)
        tryVerify(function() { return near(slider.value, asked) })
        verify(near(chip.volume, asked))
    }

    function test_4_muteButton() {
        var mute = named("mute")
        verify(mute !== null)
        click(mute)
        tryVerify(function() { return wpctl("bar_speakers").muted }, 15000, "wpctl reads muted")
        tryCompare(chip, "muted", true, 10000)
        compare(defaultSink.audio.muted, true)
        click(mute)
        tryVerify(function() { return !wpctl("bar_speakers").muted }, 15000, "wpctl reads unmuted")
        tryCompare(chip, "muted", false, 10000)
    }

    function test_5_theOutputPicker() {
        var speakers = keyOf("bar_speakers"), headset = keyOf("bar_headset")
        compare(menu.sinks.map(function(n) { return n.description }), ["Headset", "Speakers"])
        var pick = row("Headset")
        verify(pick !== null)
        compare(pick.selected, false)
        verify(row("Speakers").selected)
        click(pick)
        // audio.setPreferredDefault: the user's choice, and WirePlumber's default following it.
        tryCompare(Qsd.audio, "preferredDefaultAudioSink", headset, 15000)
        tryCompare(Qsd.audio, "defaultAudioSink", headset, 15000)
        tryVerify(function() { return QsdDaemon.drive("pw-default-sink").output === "bar_headset" }, 15000, "wpctl's default sink")
        compare(defaultSink.name, "bar_headset")
        verify(defaultRef.node === defaultSink)
        tryVerify(function() { return row("Headset").selected && !row("Speakers").selected }, 10000, "the menu shows the choice")
        compare(menu.nameOf(menu.sink), "Headset")
        tryVerify(function() { return near(chip.volume, defaultSink.audio.volume) }, 10000, "the chip shows the new default")
        verify(speakers !== headset)
    }
}
