import { registry } from "@web/core/registry";
import { screenshot } from "./pv_agent_tour_utils";

// A clerk gives an answer a thumbs down and suggests a correction of the cited entry.
registry.category("web_tour.tours").add("pv_agent_feedback", {
    url: "/odoo",
    steps: () => [
        {
            trigger: ".o_pv_agent_systray_toggle",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer_card .o_pv_agent_vote_down",
            content: "thumbs down",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_vote_down.text-danger",
            content: "the vote is recorded",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_suggest",
            content: "suggest a correction",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_correction select.o_pv_agent_correction_entry:has(option:contains('pv-sv-01'))",
            content: "the cited entry is preselected",
        },
        {
            trigger: ".o_pv_agent_correction .o_pv_agent_correction_text",
            run: "edit Die Grenze für 2027 fehlt noch.",
        },
        screenshot("panel-correction", ".o_pv_agent_correction .o_pv_agent_correction_send:enabled"),
        {
            trigger: ".o_pv_agent_correction .o_pv_agent_correction_send:enabled",
            run: "click",
        },
        {
            trigger: ".o_notification.border-success, .o_notification:has(.text-success), .o_notification",
            content: "the clerk is thanked",
        },
        {
            trigger: ".o_pv_agent_panel:not(:has(.o_pv_agent_correction))",
            content: "the form closes",
        },
    ],
});

// The manager sees the thumbs down and the suggestion, opens the suggestion beside the answer
// and the cited entry, and accepts it: the entry opens for editing.
registry.category("web_tour.tours").add("pv_agent_review", {
    url: "/odoo/action-pv_agent.action_pv_agent_feedback_review",
    steps: () => [
        {
            trigger: ".o_list_view .o_data_row td[name='text']:contains('2027 fehlt')",
            content: "the suggestion is listed",
        },
        {
            trigger: ".o_list_view .o_data_row td[name='kind']:not(:contains('2027'))",
            content: "with the thumbs down",
        },
        {
            trigger: ".o_list_view:has(.o_data_row:nth-child(2))",
            content: "two items to review",
        },
        {
            trigger: ".o_list_view .o_data_row td[name='text']:contains('2027 fehlt')",
            run: "click",
        },
        {
            trigger: ".o_form_view .o_pv_agent_review .o_field_widget[name='answer_html']:contains('551,10')",
            content: "the answer as the clerk saw it",
        },
        {
            trigger: ".o_form_view .o_pv_agent_review .o_field_widget[name='cited_html']:contains('Geringfügigkeitsgrenze')",
            content: "beside the cited entry as it is now",
        },
        screenshot("review", ".o_form_view .o_pv_agent_review"),
        {
            trigger: ".o_form_view button[name='action_accept']",
            content: "accept",
            run: "click",
        },
        {
            trigger: ".o_form_view .o_field_widget[name='entry_id'] input",
            content: "the entry opens for editing",
        },
        {
            trigger: ".o_breadcrumb:contains('pv-sv-01')",
        },
    ],
});
