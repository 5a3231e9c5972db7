# category: graph_break
# about: torch.cov checks its normalising factor with aten.equal, a data-dependent operator, under fullgraph=True
import torch


def covariance_penalty(embeddings):
    cov = torch.cov(embeddings.T)
    off_diagonal = cov - torch.diag(torch.diagonal(cov))
    return off_diagonal.pow(2).sum() / embeddings.shape[1]


penalty = torch.compile(covariance_penalty, fullgraph=True)
print(penalty(torch.randn(16, 4)))
