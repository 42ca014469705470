#pragma once
// A preference record (a prompt, the answer preferred and the one rejected) in the forms the
// fine-tuning launchers read, and the form a file's records take (its first record's):
//
//   TRL, text          {"prompt": "...", "chosen": "...", "rejected": "..."}
//   TRL, conversations {"prompt": [messages], "chosen": [messages], "rejected": [messages], "tools": ...}
//   TRL, implicit prompt {"chosen": ..., "rejected": ...}: both whole (text or conversations), the
//     prompt their shared start, split off as TRL's extract_prompt does
//   LLaMA-Factory, alpaca {"instruction", "input", "chosen": "...", "rejected": "...", "system", "history"}
//   LLaMA-Factory, sharegpt {"conversations": [...], "chosen": {"from": "gpt", "value": ...},
//     "rejected": {...}, "system", "tools"}, or with OpenAI's keys: {"messages": [{"role", "content"}...],
//     "chosen": {"role": "assistant", "content": ...}, "rejected": {...}}
//   ms-swift           {"messages": [..., {"role": "assistant", ...}], "rejected_response": "..."}: the
//     last message is the answer chosen; or "rejected_messages", the same conversation with the
//     answer rejected last
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenize/input_jobs.hpp"
#include "tokenizer/chat_format.hpp"

namespace zt {

enum class PreferenceForm { None, TrlText, TrlChat, ImplicitText, ImplicitChat, Alpaca, ShareGpt, Swift };

// "TRL prompt/chosen/rejected texts", ...; for None: "no preference pair".
std::string_view preference_form_name(PreferenceForm form);
// TRL's text forms (the others are conversations, rendered in the chat format).
inline bool preference_form_is_text(PreferenceForm form) {
  return form == PreferenceForm::TrlText || form == PreferenceForm::ImplicitText;
}
// By the record's keys (and, for TRL's forms, whether they hold text or messages); None for a record
// that is no preference pair.
PreferenceForm preference_form_of(const nlohmann::ordered_json& record);

// The form of a file of records: its first record's (the first line, or array element, that is a
// JSON object); where names that record ("chat.jsonl:1"). None for a text file.
struct FileForm {
  PreferenceForm form = PreferenceForm::None;
  std::string where;
};
FileForm preference_form_of_file(const DataInput& input);

struct PreferencePair {
  bool text = false;
  std::string prompt, chosen, rejected;                 // text
  Conversation prompt_chat;                             // conversations: the prompt's messages and the tools offered
  std::vector<ChatMessage> chosen_chat, rejected_chat;  // the messages after the prompt
};

// Fails (zt::Error) naming the field that is missing or wrong; `system` is the system message of a
// conversation without one (--system).
PreferencePair preference_pair_of(const nlohmann::ordered_json& record, PreferenceForm form,
                                  const std::optional<std::string>& system = std::nullopt);

}  // namespace zt
