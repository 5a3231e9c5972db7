# category: export_failure
# about: an intent classifier runs an LSTM over padded utterances packed with pack_padded_sequence; torch.export of it for serving fails
# held out: written 2026-12-02 after the reducer's last change (413401f, the records pass), never used to tune it
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

VOCAB = ["<pad>", "turn", "on", "off", "the", "lights", "play", "music", "set", "alarm", "for", "seven"]
INTENTS = ["lights_on", "lights_off", "play_music", "set_alarm"]
PAD = 0


def encode(sentences):
    ids = [torch.tensor([VOCAB.index(w) for w in s.split()]) for s in sentences]
    lengths = torch.tensor([len(t) for t in ids])
    return pad_sequence(ids, batch_first=True, padding_value=PAD), lengths


class IntentClassifier(nn.Module):
    def __init__(self, emb=16, hidden=32):
        super().__init__()
        self.embed = nn.Embedding(len(VOCAB), emb, padding_idx=PAD)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(0.1)
        self.out = nn.Linear(2 * hidden, len(INTENTS))

    def forward(self, tokens, lengths):
        x = self.dropout(self.embed(tokens))
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.out(torch.cat([h[-2], h[-1]], dim=-1))


def main():
    torch.manual_seed(0)
    model = IntentClassifier().eval()
    tokens, lengths = encode(["turn on the lights", "play music", "set alarm for seven"])
    with torch.no_grad():
        print("eager:", [INTENTS[i] for i in model(tokens, lengths).argmax(-1).tolist()])
    program = torch.export.export(model, (tokens, lengths))
    print(program.graph_module.code)
    reloaded = program.module()
    print("exported:", [INTENTS[i] for i in reloaded(tokens, lengths).argmax(-1).tolist()])


if __name__ == "__main__":
    main()
