import { registry } from "@web/core/registry";
import { screenshot } from "./pv_agent_tour_utils";

// Sources first (issue 31): the model takes several seconds; the clerk sees the entries the
// answer will come from at once — labelled as found sources, not as the answer — with the key
// line that matched and a cancel button; then the checked answer replaces them.
registry.category("web_tour.tours").add("pv_agent_sources", {
    url: "/odoo",
    steps: () => [
        {
            trigger: ".o_pv_agent_systray_toggle",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            content: "type a question",
            run: "edit Wie hoch ist die Geringfügigkeitsgrenze 2026?",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            content: "Enter sends",
            async run(helpers) {
                this.anchor.focus();
                await helpers.press("Enter");
            },
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_sources .o_pv_agent_sources_label:contains('Gefundene Quellen – Antwort wird erstellt')",
            content: "the sources found are shown at once, labelled as such",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_source_chip[data-entry='pv-sv-01']:contains('Geringfügigkeitsgrenze'):contains('2026-01'):enabled",
            content: "a chip per source: id · title · Stand, openable",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_source .o_pv_agent_source_line:contains('551,10')",
            content: "with the key line that matched the question",
        },
        {
            trigger: ".o_pv_agent_panel:not(:has(.o_pv_agent_answer_card)) .o_pv_agent_pending .o_pv_agent_cancel:contains('Abbrechen')",
            content: "no answer yet: the question is still in progress and can be cancelled",
        },
        screenshot("panel-sources", ".o_pv_agent_panel .o_pv_agent_sources"),
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer_card[data-state='answered'] .o_pv_agent_answer:contains('551,10')",
            content: "the checked answer arrives",
            timeout: 30000,
        },
        {
            trigger: ".o_pv_agent_panel:not(:has(.o_pv_agent_sources)):not(:has(.o_pv_agent_pending))",
            content: "and replaces the sources and the progress line",
        },
    ],
});

// Cancel (issue 31): a waiting question ends at once with who cancelled it and when, and can be
// asked again.
registry.category("web_tour.tours").add("pv_agent_cancel", {
    url: "/odoo",
    steps: () => [
        {
            trigger: ".o_pv_agent_systray_toggle",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            run: "edit Wie hoch ist die Geringfügigkeitsgrenze 2026?",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            async run(helpers) {
                this.anchor.focus();
                await helpers.press("Enter");
            },
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_pending .o_pv_agent_progress:contains('In der Warteschlange (Position 1)')",
            content: "the question waits in the queue, first in line",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_pending .o_pv_agent_cancel",
            content: "the clerk cancels it",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_cancelled:contains('Abgebrochen von Clara Clerk um')",
            content: "it ends at once, saying who cancelled it and when",
        },
        {
            trigger: ".o_pv_agent_panel:not(:has(.o_pv_agent_pending)):not(:has(.o_pv_agent_sources)) .o_pv_agent_cancelled .o_pv_agent_retry",
            content: "nothing is pending any more; it can be asked again",
        },
    ],
});
